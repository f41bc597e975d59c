from tests.ui.conftest import seeded, template, with_personal  # noqa: F401  (the seeded stores of the HTTP tests)
