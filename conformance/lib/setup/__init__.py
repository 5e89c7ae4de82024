"""Runner setup: the driver under test brought to where the suite can start (the fake driver
deployed on kind), the permissions asked for up front, preflight."""
