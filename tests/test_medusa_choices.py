"""The medusa_choices editor's parser: a valid list comes back as tuples; each kind of bad input gets its own
clear message."""
import pytest

from specviz.errors import SpecVizError
from specviz.medusa_choices import parse_choices

pytestmark = pytest.mark.fast


def test_valid_list():
    assert parse_choices("[(0,), (1,), (0, 0), [0, 0, 1]]", 3) == ((0,), (1,), (0, 0), (0, 0, 1))


@pytest.mark.parametrize("text, says", [
    ("[(0,), (1,", "found the end"),  # the flat parser names what it expected and where (issue 35, item 29)
    ("[]", "non-empty list"),
    ("[(0,), 'a']", "unexpected \"'\" at character 8"),
    ("[(0,), (0.5,)]", "unexpected '.' at character 10"),
    ("[(0,), (12,)]", "0..9"),
    ("[(0,), (0, 0), (0, 0, 0), (0, 0, 0, 0)]", "only 3 heads"),
    ("[(0,), (0,)]", "twice"),
    ("[(0,), (1, 0)]", "(1,), which is not in the list"),
])
def test_bad_input_says_what_is_wrong(text, says):
    with pytest.raises(SpecVizError, match=None) as e:
        parse_choices(text, 3)
    assert says in str(e.value)


def test_too_many_nodes():
    with pytest.raises(SpecVizError, match="at most 4"):
        parse_choices(str([(i,) for i in range(5)]), 3, max_nodes=4)
