"""A run's board reached from outside its flow: over HTTP on loopback (`http`), and opened
from a stopped run's directory (`run_dir`), for `swarmflow run --board-port` and the
`swarmflow board` commands. The board itself lives in `swarmflow.runtime.board`.
"""
