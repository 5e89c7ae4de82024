module kep5004.local/runc-capfilter

go 1.26
