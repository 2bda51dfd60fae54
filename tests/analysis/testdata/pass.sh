#!/bin/sh
# A predicate that always holds: the analysis tests only need a test target.
exit 0
