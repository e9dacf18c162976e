// textbook exercises (being written)
