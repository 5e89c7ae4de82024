"""Classic device plugin (v1beta1) serving the same emulated GPUs as the DRA plugin."""
