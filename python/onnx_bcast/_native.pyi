# Type stubs of the compiled extension (python/src/lib.rs). The public API is onnx_bcast/__init__.py.
from typing import Any, Dict, List, Optional, Tuple, Union

__version__: str

class OnnxBcastError(Exception): ...
class ModelError(OnnxBcastError): ...
class RefusedError(OnnxBcastError): ...
class BindError(OnnxBcastError): ...
class InternalError(OnnxBcastError): ...

class NativeReport:
    def failed(self) -> bool: ...
    def summary_json(self) -> str: ...
    def summary_text(self) -> str: ...
    def findings_json(self) -> str: ...
    def to_json(self) -> str: ...

def check(
    model: Union[str, bytes],
    name: Optional[str] = None,
    strict: bool = False,
    deny: List[str] = ...,
    warn: List[str] = ...,
    allow: List[str] = ...,
    left_out: List[Tuple[int, int]] = ...,
    bind: List[Tuple[str, int]] = ...,
    ranges: List[Tuple[str, str]] = ...,
    profile: Optional[Tuple[str, str, str]] = None,
    safe_ranges: bool = False,
) -> NativeReport: ...
def shapes(
    model: Union[str, bytes],
    name: Optional[str] = None,
    left_out: List[Tuple[int, int]] = ...,
    bind: List[Tuple[str, int]] = ...,
    ranges: List[Tuple[str, str]] = ...,
    profile: Optional[Tuple[str, str, str]] = None,
) -> str: ...
def expand(
    model: Union[str, bytes],
    out: Optional[str],
    options: Dict[str, Any],
    name: Optional[str] = None,
    bind: List[Tuple[str, int]] = ...,
    ranges: List[Tuple[str, str]] = ...,
    profile: Optional[Tuple[str, str, str]] = None,
) -> Tuple[Optional[bytes], str]: ...
def infer(
    model: Union[str, bytes],
    out: Optional[str],
    overwrite_declared: bool,
    name: Optional[str] = None,
    bind: List[Tuple[str, int]] = ...,
) -> Tuple[Optional[bytes], str]: ...
def fold(
    model: Union[str, bytes],
    out: Optional[str],
    materialized: bool,
    name: Optional[str] = None,
) -> Tuple[Optional[bytes], str]: ...
def explain(code: Optional[str] = None) -> Optional[str]: ...
def find_models(folder: str) -> List[Tuple[str, Optional[str]]]: ...
def run_cli(argv: List[str]) -> int: ...
