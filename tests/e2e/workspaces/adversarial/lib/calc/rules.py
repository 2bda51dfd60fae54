"""Rounding rules shared by the calculator."""

ROUNDING = 2
