"""onnx-bcast: make broadcasting in ONNX models visible, checked and explicit.

The Python API of the ``onnx-bcast`` command line, in the shape ONNX users already call
(``onnx.checker.check_model``, ``onnx.shape_inference.infer_shapes``, ``onnxsim.simplify``)::

    import onnx_bcast

    report = onnx_bcast.check("model.onnx")            # a path, bytes, or an onnx.ModelProto
    assert report.ok, report                           # the repr lists the findings
    model, summary = onnx_bcast.expand(model_proto)    # returns the kind it was given
    onnx_bcast.shapes("model.onnx")["main"]["logits"]  # TensorType(elem_type='float', shape=('batch', 10))

The implementation is in ``onnx_bcast._api``; this module holds the public names only (``__all__``).
"""

from ._api import *  # noqa: F401,F403
from ._api import __all__, __version__  # noqa: F401


def __dir__() -> list:
    # What `dir(onnx_bcast)` and completion show: the public names, not the modules the package is made of.
    return sorted([*__all__, "__version__"])
