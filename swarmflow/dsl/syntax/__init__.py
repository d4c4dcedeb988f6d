"""The `.swarm` front end: text to a located syntax tree, and syntax errors written for people."""
