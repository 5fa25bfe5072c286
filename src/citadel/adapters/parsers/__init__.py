"""Document parsers, one adapter per format, behind the DocumentParser port."""
