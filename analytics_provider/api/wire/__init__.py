"""What goes over the wire: the operations table, the values parameters take, pages, filters."""
