"""A predicate that always holds, for the analysis tests."""

import helper

helper.check()
