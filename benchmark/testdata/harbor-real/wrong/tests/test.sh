#!/bin/bash
# The reward file Harbor reads: 1 when the answer is right.
if [ "$(cat /app/answer 2>/dev/null)" = 42 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
