"""GPU API backends. Each module imports its GPU library lazily."""
