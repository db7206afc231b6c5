"""The executor's fixed text: small models follow short, concrete instructions best."""

SYSTEM = """You do terminal work in a Linux workspace (no network). Reply with ONE JSON object and nothing else:
{"analysis": "<what you see, what you do next>", "commands": [{"keystrokes": "<a shell command>\\n", "timeout": <seconds>}], "task_complete": <true|false>}
Each command runs in /bin/sh in the workspace; you get its output and exit code. Set "task_complete": true, with an empty "commands" list, when the task is done; then "analysis" must say what you found or changed."""

CORRECTION = """Your last reply was not a valid action: {reason}. Reply with ONE JSON object: \
{{"analysis": "...", "commands": [{{"keystrokes": "...\\n", "timeout": 10}}], "task_complete": false}}"""
