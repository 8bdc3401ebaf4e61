"""Every picture a class sees, walked, read and checked (see matrix.py, read.py, faults.py)."""
