"""Cost of a model call: the fixed prompt (system prompt and tool schemas) before and after."""
