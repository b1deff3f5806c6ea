"""Static placement: buffers with lifetimes get offsets so that buffers live at the
same time never overlap; feasibility under a capacity, height minimised.

Imports nothing from tileplan above `errors` and `ioutil`, so it is usable alone:

    >>> from tileplan.placement import Buffer, Problem, place
    >>> result = place(Problem((Buffer("a", 0, 4, 100), Buffer("b", 2, 6, 50))), capacity=200)
    >>> result.offsets, result.height, result.optimal
    ((0, 100), 150, True)
"""

from tileplan.placement.batch import place_each, signature
from tileplan.placement.csvfile import MAX_CSV_BYTES, parse_csv, parse_text, read_csv, render_csv
from tileplan.placement.problem import Buffer, Problem, lower_bound
from tileplan.placement.solve import Attempt, Placement, place
from tileplan.placement.verify import Verification, find_violations

__all__ = ["MAX_CSV_BYTES", "Attempt", "Buffer", "Placement", "Problem", "Verification", "find_violations",
           "lower_bound", "parse_csv", "parse_text", "place", "place_each", "read_csv", "render_csv", "signature"]
