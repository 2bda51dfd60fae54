"""The predicate of the same-package analysis subjects (never run)."""

import helper

helper.check()
