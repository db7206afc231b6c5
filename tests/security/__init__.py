"""The red-team battery: sandbox escape and exfiltration attempts against planted canaries."""
