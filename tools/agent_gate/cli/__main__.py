"""`python -m agent_gate.cli`: the agent-gate command."""

import sys

from agent_gate.cli.main import main

sys.exit(main())
