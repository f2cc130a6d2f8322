"""The scope check of a school's tutor measured on prompts written as pupils write
(`python -m bench.scope`)."""
