"""Static placement: buffers with lifetimes get offsets so that buffers live at the
same time never overlap; feasibility under a capacity, height minimised.

Imports nothing from tileplan above `errors` and `ioutil`, so it is usable alone:

    >>> from tileplan.placement import Buffer, Problem, place
    >>> result = place(Problem((Buffer("a", 0, 4, 100), Buffer("b", 2, 6, 50))), capacity=200)
    >>> result.offsets, result.height, result.optimal
    ((0, 100), 150, True)
"""

from tileplan.placement.batch import place_each, signature
from tileplan.placement.csvfile import parse_csv, read_csv, render_csv
from tileplan.placement.problem import Buffer, Problem, lower_bound
from tileplan.placement.solve import Attempt, Placement, place
from tileplan.placement.verify import find_violations

__all__ = ["Attempt", "Buffer", "Placement", "Problem", "find_violations", "lower_bound", "parse_csv", "place",
           "place_each", "read_csv", "render_csv", "signature"]
