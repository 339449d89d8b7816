"""Order of the gallery's examples (sphinx-gallery ``within_subsection_order``).

The worked example first, then the papers in the order of the documentation's paper pages.
Referenced from ``conf.py`` by name (a string keeps the Sphinx configuration picklable).
"""

ORDER = (
    "run_getting_started.py",
    "plot_xiao2018.py",
    "plot_burkholz2019.py",
    "plot_grzejdziak2023.py",
    "plot_blumenfeld2020.py",
    "plot_orhan2017.py",
    "plot_pytorch_bridge.py",
)


class PaperOrder:
    """Sort key: the position in :data:`ORDER`; examples not listed come last, by file name."""

    def __init__(self, src_dir):
        self.src_dir = src_dir

    def __call__(self, filename):
        return (ORDER.index(filename) if filename in ORDER else len(ORDER), filename)
