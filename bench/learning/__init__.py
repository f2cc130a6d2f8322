"""Learning over a month of simulated students: no review, fixed intervals and the bot's FSRS; with
`--habits`, the reviews the nudges bring by message habit (bench.learning.reach)."""
