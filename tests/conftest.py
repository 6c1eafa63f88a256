pytest_plugins = ["tests.fixtures_services"]
