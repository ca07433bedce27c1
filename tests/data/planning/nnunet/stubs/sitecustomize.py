# Loaded by Python at start-up when this folder is on PYTHONPATH (make_golden.py). nnU-Net's planners
# import image readers, resamplers and progress bars that planning never calls; these stand-ins let
# the imports succeed without those packages, and any call into one raises, so a plan made here
# cannot silently depend on them.
import importlib.abc
import importlib.machinery
import sys
import types

STUBBED = ("SimpleITK", "nibabel", "pandas", "scipy", "skimage", "tifffile", "tqdm")


class StubUsed(Exception):
    pass


def _stand_in(name):
    class StandIn:
        def __init__(self, *args, **kwargs):
            raise StubUsed(name + " was called while planning")

        def __call__(self, *args, **kwargs):
            raise StubUsed(name + " was called while planning")

    StandIn.__name__ = name.rsplit(".", 1)[-1]
    return StandIn


class _StubModule(types.ModuleType):
    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _stand_in(self.__name__ + "." + attr)


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path, target=None):
        if fullname.split(".")[0] in STUBBED:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _StubFinder())
