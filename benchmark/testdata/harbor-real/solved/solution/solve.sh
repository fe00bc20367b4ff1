#!/bin/bash
echo 42 > /app/answer
