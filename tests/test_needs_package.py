"""A case that imports an optional package skips where it is missing, naming the line that installs it."""

from __future__ import annotations

from trainperf import Optimization


def test_a_case_whose_package_is_missing_says_how_to_install_it() -> None:
    case = Optimization("fp8", needs_package="no_such_package_here==1.2")
    assert (
        case.missing_package()
        == "needs no_such_package_here, not installed here: pip install 'no_such_package_here==1.2'"
    )
    assert Optimization("fp8", needs_package="pytest>=8").missing_package() is None
    assert case.but("child").needs_package == "no_such_package_here==1.2"  # the cases built on it need it too
