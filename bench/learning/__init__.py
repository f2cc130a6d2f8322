"""Learning over a month of simulated students: no review, fixed intervals and the bot's FSRS."""
