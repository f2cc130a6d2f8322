"""The distress detector measured on a labelled corpus."""
