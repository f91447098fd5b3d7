"""The built-in drill scenarios: YAML files only, a package so the wheel ships them."""
