"""The pure core: values in, values out. See README.md beside this file."""
