#!/bin/sh
echo "agent_gate offline workspace: coverage tools are not available offline" >&2
exit 1
