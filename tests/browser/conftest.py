from tests.ui.conftest import seeded, template  # noqa: F401  (the seeded store of the HTTP tests)
