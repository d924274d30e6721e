"""The scenario library as tests (a folder, so the plugin can add it to a pytest run)."""
