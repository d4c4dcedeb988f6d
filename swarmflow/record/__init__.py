"""What a run writes and reads back: the event union, the journal records, the line writer and
reader, run directories, sinks.
"""
