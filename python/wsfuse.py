"""wsfuse: a thin ctypes binding of libwsfuse (include/wsfuse.h).

    import wsfuse
    with wsfuse.Context(sizes={"N": 1 << 20}) as ctx:
        k = ctx.compile_file("spec.yaml")
        print(k.text("ptx"))
        o = k(a, b, c)                # torch CUDA tensors in, output tensor(s) out

    op = wsfuse.torch_op("spec.yaml") # a torch custom op: torch.compile, CUDA graphs
    o = op(a, b, c)

No build step: the library is found by load() (`pip install .` bundles it).
torch is imported only by the calls that take tensors (launch, __call__,
torch_op), so compiling and inspecting kernels works on machines without torch
or a GPU.
"""
import ctypes
import glob
import os
import sys
from ctypes import POINTER, c_char_p, c_int, c_int64, c_size_t, c_void_p

__all__ = ["Error", "Context", "Kernel", "load", "version", "environment", "torch_op"]

DTYPES = {1: "f32", 2: "f16", 3: "bf16", 4: "fp8e4m3", 5: "fp8e5m2",   # WsfDtype -> spec name
          6: "int8", 7: "uint8", 8: "int32", 9: "int64", 10: "bool"}
_TORCH_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16",
                 "fp8e4m3": "float8_e4m3fn", "fp8e5m2": "float8_e5m2",
                 "int8": "int8", "uint8": "uint8", "int32": "int32", "int64": "int64", "bool": "bool"}
_SEVERITIES = {1: "note", 2: "warning", 3: "error"}
_DIAG_FN = ctypes.CFUNCTYPE(None, c_void_p, c_int, c_char_p)
_DUMP_FN = ctypes.CFUNCTYPE(None, c_void_p, c_char_p, c_char_p)


class _LaunchOptions(ctypes.Structure):
    _fields_ = [("stream", c_void_p), ("flags", c_void_p), ("epoch", ctypes.c_uint32), ("max_ctas", ctypes.c_int),
                ("wait_flags", c_void_p)]


class _SignalLayout(ctypes.Structure):
    _fields_ = [("flags", c_int64), ("tile_rows", ctypes.c_int), ("tile_cols", ctypes.c_int),
                ("row_tiles", c_int64), ("col_tiles", c_int64), ("batch", c_int64),
                ("view_rows", c_int64), ("view_cols", c_int64), ("waits", ctypes.c_int), ("wait_words", c_int64)]


class _KernelStats(ctypes.Structure):
    """struct WsfKernelStats."""
    _fields_ = [(n, c_int) for n in ("threads", "smem_dynamic", "smem_static", "registers", "spill_stores",
                                     "spill_loads", "stack_bytes", "ctas_per_sm", "persistent")] + \
        [("tiles", c_int64), ("grid", c_int64), ("cluster", c_int), ("workspace", c_int),
         ("view_rows", c_int), ("view_cols", c_int), ("view_elems", c_int), ("view_tiles", c_int),
         ("place_rows", c_int), ("place_elems", c_int)]


_INT64 = (-(1 << 63), (1 << 63) - 1)
_INT32 = (-(1 << 31), (1 << 31) - 1)
_UINT32 = (0, (1 << 32) - 1)
_UINTPTR = (0, (1 << 64) - 1)


def _int(value, what, limits=_INT64):
    """VALUE as an int that fits the C type of LIMITS (lo, hi), for argument WHAT.
    ctypes would wrap (2**64 + 256 is 256) and int() would truncate (1.9 is 1):
    bools and non-integers are a TypeError, values out of range a ValueError."""
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise TypeError(f"{what}: expected an integer, saw {type(value).__name__} {value!r}")
    v = value.__index__()
    if not limits[0] <= v <= limits[1]:
        raise ValueError(f"{what}: {v} is out of range [{limits[0]}, {limits[1]}]")
    return v


def _cstr(value, what):
    """VALUE (str, or bytes) as the bytes of a C string for argument WHAT: a NUL
    would end the string there, so one inside it is a ValueError."""
    data = value.encode() if isinstance(value, str) else value
    if not isinstance(data, bytes):
        raise TypeError(f"{what}: expected a string, saw {type(value).__name__} {value!r}")
    if b"\0" in data:
        raise ValueError(f"{what}: {value!r} holds a NUL character")
    return data


def _option_value(value, what):
    """An option's value as C reads it: a string, a path, an int, or a bool ("1"/"0")."""
    if value is None:
        return None
    if isinstance(value, bool):
        return b"1" if value else b"0"
    if isinstance(value, os.PathLike):
        return _cstr(os.fsencode(value), what)
    if isinstance(value, (str, bytes)):
        return _cstr(value, what)
    return str(_int(value, what)).encode()


_I64 = [c_int64 * r for r in range(9)]   # a shape or strides of rank r (WSF_MAX_RANK is 8)
_codes = None


def _dtype_codes(torch):
    """torch dtype -> WsfDtype, made once."""
    global _codes
    if _codes is None:
        _codes = {getattr(torch, _TORCH_DTYPES[n]): c for c, n in DTYPES.items() if hasattr(torch, _TORCH_DTYPES[n])}
    return _codes


def _current_device(torch):
    """torch's current CUDA device index (torch._C's getter where there is one: a launch's rate)."""
    get = getattr(torch._C, "_cuda_getDevice", None)
    return get() if get else torch.cuda.current_device()


def _current_stream(torch, index):
    """The raw CUstream torch launches on for device INDEX now."""
    get = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return get(index) if get else torch.cuda.current_stream(index).cuda_stream


class _Tensor(ctypes.Structure):
    """struct WsfTensor."""
    _fields_ = [("data", c_void_p), ("dtype", c_int), ("ndim", c_int),
                ("shape", POINTER(c_int64)), ("strides", POINTER(c_int64))]


_SIGNATURES = {
    "wsf_version": (c_char_p, []),
    "wsf_status_name": (c_char_p, [c_int]),
    "wsf_status_message": (c_char_p, [c_int]),
    "wsf_stage_from_name": (c_int, [c_char_p]),
    "wsf_context_new": (c_void_p, []),
    "wsf_context_delete": (None, [c_void_p]),
    "wsf_set_diagnostic_handler": (None, [c_void_p, _DIAG_FN, c_void_p]),
    "wsf_set_dump_handler": (None, [c_void_p, _DUMP_FN, c_void_p]),
    "wsf_context_last_error": (c_char_p, [c_void_p]),
    "wsf_set_size": (c_int, [c_void_p, c_char_p, c_int64]),
    "wsf_set_option": (c_int, [c_void_p, c_char_p, c_char_p]),
    "wsf_compile_file": (c_int, [c_void_p, c_char_p, POINTER(c_void_p)]),
    "wsf_compile_string": (c_int, [c_void_p, c_char_p, c_char_p, c_size_t, POINTER(c_void_p)]),
    "wsf_grad_file": (c_int, [c_void_p, c_char_p, POINTER(c_void_p), POINTER(c_size_t)]),
    "wsf_grad_string": (c_int, [c_void_p, c_char_p, c_char_p, c_size_t, POINTER(c_void_p), POINTER(c_size_t)]),
    "wsf_kernel_delete": (None, [c_void_p]),
    "wsf_kernel_name": (c_char_p, [c_void_p]),
    "wsf_kernel_text": (c_void_p, [c_void_p, c_int, POINTER(c_size_t)]),
    "wsf_kernel_num_args": (c_int, [c_void_p]),
    "wsf_kernel_arg_name": (c_char_p, [c_void_p, c_int]),
    "wsf_kernel_arg_is_output": (c_int, [c_void_p, c_int]),
    "wsf_kernel_arg_alias": (c_int, [c_void_p, c_int]),
    "wsf_kernel_arg_dtype": (c_int, [c_void_p, c_int]),
    "wsf_kernel_arg_rank": (c_int, [c_void_p, c_int]),
    "wsf_kernel_arg_dim": (c_int64, [c_void_p, c_int, c_int]),
    "wsf_kernel_arg_dim_name": (c_char_p, [c_void_p, c_int, c_int]),
    "wsf_kernel_arg_row_strided": (c_int, [c_void_p, c_int]),
    "wsf_kernel_launch": (c_int, [c_void_p, c_void_p, POINTER(_Tensor), c_int, c_void_p]),
    "wsf_kernel_launch_ex": (c_int, [c_void_p, c_void_p, POINTER(_Tensor), c_int, c_void_p]),
    "wsf_kernel_signal_layout": (c_int, [c_void_p, c_void_p, POINTER(_Tensor), c_int, c_void_p]),
    "wsf_kernel_tuned": (c_char_p, [c_void_p]),
    "wsf_kernel_stats": (c_int, [c_void_p, c_void_p]),
    "wsf_environment": (c_char_p, [c_void_p, c_int]),
}
_libs = {}     # path -> CDLL; with _nvrtc, the only module state
_nvrtc = None  # the NVRTC libraries _preload_nvrtc loaded, once it has run

# runtime/nvrtc.c's sonames, in its order; and where the nvidia-cuda-nvrtc
# wheels (the ones torch installs) put NVRTC under site-packages
_NVRTC_SONAMES = ("libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so")
_NVRTC_WHEEL_DIRS = ("nvidia/cu13/lib", "nvidia/cuda_nvrtc/lib")   # CUDA 13, CUDA 12


def _wheel_nvrtc(dirs):
    """The libnvrtc.so.N files of nvidia-cuda-nvrtc wheels under DIRS (sys.path),
    newest N first, then in the order of DIRS."""
    found = []
    for i, d in enumerate(dirs):
        for sub in _NVRTC_WHEEL_DIRS:
            for f in glob.glob(os.path.join(d, sub, "libnvrtc.so.[0-9]*")):
                major = os.path.basename(f)[len("libnvrtc.so."):].split(".")[0]
                if major.isdigit():
                    found.append((-int(major), i, f))
    return [f for _, _, f in sorted(found)]


def _preload_nvrtc():
    """libwsfuse opens NVRTC by soname.  When no NVRTC is found that way (and
    WSFUSE_NVRTC_PATH does not name one), loads the newest from an
    nvidia-cuda-nvrtc wheel by its path, its builtins library first (some of
    those wheels' NVRTC cannot find it): libwsfuse's dlopen of the soname then
    returns the library already loaded."""
    global _nvrtc
    if _nvrtc is not None:
        return
    _nvrtc = []
    if os.environ.get("WSFUSE_NVRTC_PATH"):
        return
    for name in _NVRTC_SONAMES:
        try:
            _nvrtc.append(ctypes.CDLL(name))
            return
        except OSError:
            pass
    for path in _wheel_nvrtc(sys.path):
        builtins = sorted(glob.glob(os.path.join(os.path.dirname(path), "libnvrtc-builtins.so.*")))
        try:
            _nvrtc.extend(ctypes.CDLL(f) for f in builtins + [path])
            return
        except OSError:
            continue


def load(path=None):
    """The libwsfuse CDLL (cached per path).  PATH, else $WSFUSE_LIB, else the
    library the wheel bundles (wsfuse.libs/ next to this module), else
    build/libwsfuse.so next to this python/ directory, else the system's
    libwsfuse.so.0.  NVRTC is the system's, else an nvidia-cuda-nvrtc wheel's."""
    if path is None:
        path = os.environ.get("WSFUSE_LIB")
    if path is None:
        here = os.path.dirname(os.path.abspath(__file__))
        bundled = os.path.join(here, "wsfuse.libs", "libwsfuse.so.0")
        checkout = os.path.normpath(os.path.join(here, "..", "build", "libwsfuse.so"))
        path = next((p for p in (bundled, checkout) if os.path.exists(p)), "libwsfuse.so.0")
    if path not in _libs:
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            raise OSError(f"{e} (build it with make, or point WSFUSE_LIB at libwsfuse.so)") from None
        for name, (res, args) in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        _libs[path] = lib
        _preload_nvrtc()
    return _libs[path]


def _libc_free(ptr):
    """free() of a buffer the library malloc'ed for the caller (wsf_grad_*'s text)."""
    free = ctypes.CDLL(None).free
    free.argtypes, free.restype = [c_void_p], None
    free(ptr)


def version():
    """The version of the library load() finds ("0.1.0"): wsf_version()."""
    return load().wsf_version().decode()


def environment(full=False):
    """What `wsfuse --version` (FULL: `wsfuse --version -v`) prints: wsfuse's
    version, the NVRTC and driver found and their paths, each GPU; with FULL
    also the build, the NVRTC options, the cache folder and the environment
    variables wsfuse reads.  Needs no GPU (wsf_environment)."""
    lib = load()
    ctx = lib.wsf_context_new()
    if not ctx:
        raise MemoryError("wsf_context_new failed")
    try:
        text = lib.wsf_environment(ctx, 1 if full else 0)
        if text is None:
            raise MemoryError("wsf_environment failed")
        return text.decode("utf-8", "replace")
    finally:
        lib.wsf_context_delete(ctx)


class Error(Exception):
    """A failed call: status (e.g. "WSF_ERR_INPUT"), message (the library's last
    error, or the status text) and diagnostics [(severity, text)] from that call."""

    def __init__(self, status, message, diagnostics=()):
        super().__init__(f"{status}: {message}")
        self.status, self.message, self.diagnostics = status, message, list(diagnostics)


def _layout(x):
    """(DIMS, X_stored) with X == X_stored.permute(...).expand(X's shape) for a contiguous X_stored (a
    transpose or permute of a contiguous tensor, torch's x.t(), and dims expanded from none, stride 0:
    b.expand(M, -1)): DIMS as option layout writes them, the memory's dim for each dim of X or "*" for
    an expanded one; or None."""
    kept = [i for i in range(x.dim()) if x.stride(i) != 0 or x.shape[i] == 1]
    if not kept or x.dim() < 2:
        return None
    sub = x[tuple(slice(None) if i in kept else 0 for i in range(x.dim()))]   # the expanded dims dropped
    order = sorted(range(sub.dim()), key=lambda i: (-sub.stride(i), i))   # the memory's dims, outermost first
    stored = sub.permute(order)
    if not stored.is_contiguous() or (len(kept) == x.dim() and order == list(range(x.dim()))):
        return None
    dims, inv = [], iter(_inverse(order))
    for i in range(x.dim()):
        dims.append(str(next(inv)) if i in kept else "*")
    return ",".join(dims), stored


def _inverse(p):
    """The permutation that undoes P."""
    q = [0] * len(p)
    for j, i in enumerate(p):
        q[i] = j
    return q


def _row_strided(x):
    """Are X's strides those of rows wider than a row: the last 1, the dims but the last one run of steps
    (16 bytes a multiple) over the row stride?  (A slice of the last dim of a contiguous tensor.)"""
    if x.dim() < 2 or x.stride(-1) != 1:
        return False
    row, step = None, None
    for n, s in zip(reversed(x.shape[:-1]), reversed(x.stride()[:-1])):
        if n == 1:
            continue
        if row is None:
            row, step = s, s
        elif s != step:
            return False
        step *= n
    return row is not None and row >= x.shape[-1] and row * x.element_size() % 16 == 0


def _same(n, want, message):
    if n != want:
        raise Error("WSF_ERR_INPUT", message)


class Context:
    """Owns a WsfContext: size bindings, options, and the diagnostics it reports.

    sizes: {name: value} for set_size; options: set_option names with '_' for '-'
    (stop_after="ptx", cache="0", cache_dir=..., dump_after="all", dump_dir=...,
    override_dir=...: a folder whose NAME-KEY/NAME.cu, else NAME.cu, replaces a
    kernel's generated CUDA).
    Diagnostics accumulate in .diagnostics as (severity, text); IR dumps in .dumps
    as (pass, text).  Keep the context open while its kernels are launched."""

    def __init__(self, sizes=None, lib=None, **options):
        self._lib = lib or load()
        self._ptr = self._lib.wsf_context_new()
        if not self._ptr:
            raise MemoryError("wsf_context_new failed")
        self.diagnostics, self.dumps = [], []
        diags, dumps = self.diagnostics, self.dumps   # closures hold the lists, not self
        self._diag_fn = _DIAG_FN(lambda _u, sev, msg: diags.append(
            (_SEVERITIES.get(sev, "?"), msg.decode("utf-8", "replace"))))
        self._dump_fn = _DUMP_FN(lambda _u, p, text: dumps.append(
            (p.decode(), text.decode("utf-8", "replace"))))
        self._lib.wsf_set_diagnostic_handler(self._ptr, self._diag_fn, None)
        self._lib.wsf_set_dump_handler(self._ptr, self._dump_fn, None)
        for name, value in (sizes or {}).items():
            self.set_size(name, value)
        for name, value in options.items():
            self.set_option(name.replace("_", "-"), value)

    def _handle(self):
        if not self._ptr:
            raise Error("WSF_ERR_USAGE", "the context is closed")
        return self._ptr

    def _call(self, fn, *args):
        """Calls FN(ctx, *ARGS); a nonzero status raises Error with this call's diagnostics."""
        first = len(self.diagnostics)
        status = fn(self._handle(), *args)
        if status:
            new = self.diagnostics[first:]   # none: the last error is stale, use the status text
            msg = self._lib.wsf_context_last_error(self._ptr).decode("utf-8", "replace") if new else ""
            raise Error(self._lib.wsf_status_name(status).decode(),
                        msg or self._lib.wsf_status_message(status).decode(), new)

    def set_size(self, name, value):
        """Binds size NAME to VALUE, an int (overrides the spec's default).  A bool, a
        float or a value outside int64 is a TypeError or ValueError, not rounded or wrapped."""
        self._call(self._lib.wsf_set_size, _cstr(name, "size name"), _int(value, f"size {name}"))

    def set_option(self, name, value):
        """Sets option NAME ("stop-after", "cache", "cache-dir", "dump-after", "dump-dir", ...)
        to VALUE: a string, a path, an int, a bool (1 or 0) or None (unset)."""
        self._call(self._lib.wsf_set_option, _cstr(name, "option name"),
                   _option_value(value, f"option {name}"))

    def _compile(self, fn, *args):
        out = c_void_p()
        self._call(fn, *args, ctypes.byref(out))
        return Kernel(self, out.value)

    def compile_file(self, path):
        """Compiles the spec in file PATH; returns a Kernel."""
        return self._compile(self._lib.wsf_compile_file, _cstr(os.fsencode(path), "spec path"))

    def compile_string(self, text, name="<string>"):
        """Compiles spec TEXT (NAME appears in diagnostics); returns a Kernel."""
        data = text.encode() if isinstance(text, str) else bytes(text)
        return self._compile(self._lib.wsf_compile_string, _cstr(name, "spec name"), data, len(data))

    def _grad(self, fn, *args):
        out, size = c_void_p(), c_size_t()
        self._call(fn, *args, ctypes.byref(out), ctypes.byref(size))
        try:
            return ctypes.string_at(out.value, size.value).decode()
        finally:
            _libc_free(out.value)

    def grad_file(self, path):
        """The backward of the spec in file PATH, derived by the compiler, as spec text (str): inputs
        the spec's inputs it reads and grad_OUT per output, outputs grad_IN per float input (docs/spec.md,
        Gradients).  Compile it with compile_string."""
        return self._grad(self._lib.wsf_grad_file, _cstr(os.fsencode(path), "spec path"))

    def grad_string(self, text, name="<string>"):
        """The backward of spec TEXT as spec text (str); see grad_file."""
        data = text.encode() if isinstance(text, str) else bytes(text)
        return self._grad(self._lib.wsf_grad_string, _cstr(name, "spec name"), data, len(data))

    def close(self):
        """Frees the WsfContext (kernels stay valid but can no longer be launched)."""
        if getattr(self, "_ptr", None):
            self._lib.wsf_context_delete(self._ptr)
            self._ptr = None

    __del__ = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Kernel:
    """A compiled fusion.  Arguments are the spec's inputs in order, then its outputs."""

    def __init__(self, ctx, ptr):
        self._ctx, self._lib, self._ptr = ctx, ctx._lib, ptr
        lib, n = self._lib, self._lib.wsf_kernel_num_args(ptr)
        self.name = lib.wsf_kernel_name(ptr).decode()
        self.arg_names = tuple(lib.wsf_kernel_arg_name(ptr, i).decode() for i in range(n))
        self.arg_dtypes = tuple(DTYPES.get(lib.wsf_kernel_arg_dtype(ptr, i)) for i in range(n))
        self.arg_is_output = tuple(lib.wsf_kernel_arg_is_output(ptr, i) == 1 for i in range(n))
        self.arg_ranks = tuple(lib.wsf_kernel_arg_rank(ptr, i) for i in range(n))
        # the input whose memory each output is written into (the spec's alias), else None
        self.arg_alias = tuple(None if lib.wsf_kernel_arg_alias(ptr, i) < 0 else lib.wsf_kernel_arg_alias(ptr, i)
                               for i in range(n))
        self.num_inputs = self.arg_is_output.count(False)
        self._dims = None

    @property
    def num_args(self):
        return len(self.arg_names)

    @property
    def tuned(self):
        """What the measured choice (Context(tune=1)) chose at the first launch: "the spec's
        schedule" or the hint it added ("split_k: 2"); None before, or for a kernel that does not tune."""
        t = self._lib.wsf_kernel_tuned(self._ptr)
        return t.decode() if t else None

    @property
    def stats(self):
        """What the kernel takes of the GPU, as `wsfuse compile -v` prints it: a dict of
        threads, smem_dynamic, smem_static, registers, spill_stores, spill_loads,
        stack_bytes, ctas_per_sm, persistent, tiles, grid, cluster, workspace, view_rows,
        view_cols, view_elems, view_tiles, place_rows, place_elems (wsfuse.h's WsfKernelStats).
        The ptxas figures (registers, spills, stack, static shared memory, CTAs an SM) are -1
        for a kernel compiled no further than its CUDA; a kernel stopped at the fusion IR is
        an Error."""
        out = _KernelStats()
        status = self._lib.wsf_kernel_stats(self._ptr, ctypes.byref(out))
        if status:
            raise Error(self._lib.wsf_status_name(status).decode(),
                        f"kernel '{self.name}' has no stats: it was compiled no further than its fusion IR")
        return {name: getattr(out, name) for name, _ in _KernelStats._fields_}

    def text(self, stage):
        """The text of STAGE ('fusion-ir', 'kernel-ir', 'cuda', 'ptx'; 'cubin' gives bytes),
        or None if compilation stopped before it."""
        code = self._lib.wsf_stage_from_name(_cstr(stage, "stage"))
        if not code:
            raise ValueError(f"unknown stage {stage!r}")
        size = c_size_t()
        p = self._lib.wsf_kernel_text(self._ptr, code, ctypes.byref(size))
        if not p:
            return None
        data = ctypes.string_at(p, size.value)
        return data if stage == "cubin" else data.decode("utf-8", "replace")

    def cubin(self):
        """The sm_90a cubin bytes, or None."""
        return self.text("cubin")

    def _symbolic_dims(self):
        """Each argument's dims: the size name behind each one, or its constant extent.

        Extents from wsf_kernel_arg_dim are those bound at compile time, while
        launches rebind sizes from the tensors: the names are what carries over."""
        if self._dims is None:
            self._dims = []
            for i in range(self.num_args):
                dims = []
                for d in range(self.arg_ranks[i]):
                    name = self._lib.wsf_kernel_arg_dim_name(self._ptr, i, d)
                    dims.append(name.decode() if name else int(self._lib.wsf_kernel_arg_dim(self._ptr, i, d)))
                self._dims.append(dims)
        return self._dims

    def row_strided(self, i):
        """Whether a launch may pass argument I with rows wider than a row (a slice of its
        last dim, x[:, :n]), read through a tensor map of its rows (wsf_kernel_arg_row_strided)."""
        return self._lib.wsf_kernel_arg_row_strided(self._ptr, i) == 1

    def output_shapes(self, *inputs):
        """The outputs' shapes for these inputs (tensors or shape tuples): the spec's
        output shapes with every size name bound from the inputs' shapes."""
        return [tuple(int(v) for v in s) for s in self._bind(inputs)[1]]

    def _bind(self, inputs, same=None):
        """({size name: extent}, [output shape]) for INPUTS (tensors or shape tuples).

        SAME(n, want, message) checks an extent against the one the spec or an earlier
        argument gives (default: Error unless equal); the extents are passed through
        untouched, so torch's symbolic sizes stay symbolic."""
        if len(inputs) != self.num_inputs:
            raise Error("WSF_ERR_INPUT", f"kernel '{self.name}' takes {self.num_inputs} inputs, "
                        f"saw {len(inputs)}")
        same = same or _same
        dims, bound = self._symbolic_dims(), {}
        for i, x in enumerate(inputs):
            shape, spec = tuple(getattr(x, "shape", x)), dims[i]
            if len(shape) != len(spec):
                raise Error("WSF_ERR_INPUT", f"argument '{self.arg_names[i]}': rank {len(shape)}, "
                            f"expected {len(spec)}")
            for d, (n, s) in enumerate(zip(shape, spec)):
                want = s if isinstance(s, int) else bound.setdefault(s, n)
                why = f"the spec says {s}" if isinstance(s, int) else \
                    f"size {s} is {want} from an earlier argument"
                same(n, want, f"argument '{self.arg_names[i]}': dim {d} is {n}, but {why}")
        shapes = []
        for i in range(self.num_inputs, self.num_args):
            shape = []
            for d, s in enumerate(dims[i]):
                v = s if isinstance(s, int) else bound.get(s)
                if v is None:   # a size no input names: its extent bound at compile time
                    v = int(self._lib.wsf_kernel_arg_dim(self._ptr, i, d))
                    if v < 0:
                        raise Error("WSF_ERR_INPUT", f"output '{self.arg_names[i]}': size {s} is named by "
                                    "no input and has no value (bind it with sizes=)")
                shape.append(v)
            shapes.append(tuple(shape))
        return bound, shapes

    def launch(self, *tensors, stream=None, flags=None, epoch=0, max_ctas=0, wait_flags=None):
        """Launches on torch CUDA tensors (contiguous), inputs then outputs, on STREAM
        (a torch.cuda.Stream or a raw CUstream int; default: torch's current stream).

        A kernel compiled with schedule: {signal: per_tile} needs FLAGS, an int32 CUDA
        tensor of signal_layout(...)["flags"] words, and EPOCH, nonzero and new each
        launch: each tile's word becomes EPOCH once the tile is in global memory
        (wsfuse.h says the protocol).  A kernel with inputs marked wait: per_tile needs
        WAIT_FLAGS, an int32 CUDA tensor of signal_layout(...)["wait_words"] words, and
        EPOCH: it reads a part of such an input once the part's word is EPOCH.  EPOCH is a
        uint32 (1 to 2**32 - 1: a counter past that must start over, not wrap to 0) and
        MAX_CTAS, an int32, caps a persistent grid."""
        if epoch or max_ctas:   # the common launch passes neither
            epoch, max_ctas = _int(epoch, "epoch", _UINT32), _int(max_ctas, "max_ctas", _INT32)
        if stream is not None:
            stream = _int(getattr(stream, "cuda_stream", stream), "stream", _UINTPTR)
        import torch
        args, keep, device = self._args(tensors)
        for name, f in (("flags", flags), ("wait_flags", wait_flags)):
            if f is not None and (not isinstance(f, torch.Tensor) or f.dtype != torch.int32 or
                                  not f.is_cuda or not f.is_contiguous()):
                raise Error("WSF_ERR_INPUT", f"{name}: expected a contiguous int32 CUDA tensor")
        # the tensors' device current while the driver launches (its context); switched only when it is not
        index = device.index if device is not None else _current_device(torch)
        switch = index != _current_device(torch)
        if switch:
            guard = torch.cuda.device(device)
            guard.__enter__()
        try:
            handle = stream if stream is not None else _current_stream(torch, index)
            if flags is None and wait_flags is None and not epoch and not max_ctas:
                self._ctx._call(self._lib.wsf_kernel_launch, self._ptr, args, len(tensors), c_void_p(handle))
                return
            opts = _LaunchOptions(c_void_p(handle), c_void_p(flags.data_ptr() if flags is not None else 0),
                                  epoch, max_ctas,
                                  c_void_p(wait_flags.data_ptr() if wait_flags is not None else 0))
            self._ctx._call(self._lib.wsf_kernel_launch_ex, self._ptr, args, len(tensors), ctypes.byref(opts))
        finally:
            if switch:
                guard.__exit__(None, None, None)

    def signal_layout(self, *tensors):
        """For a kernel that signals its tiles or waits for its inputs', where a launch on
        TENSORS (inputs then outputs) puts each tile's flag: a dict of flags (words),
        tile_rows, tile_cols, row_tiles, col_tiles, batch, view_rows, view_cols, waits
        (inputs that wait), wait_words (the words of their wait_flags); word (b * row_tiles + r) *
        col_tiles + c covers rows [r * tile_rows, ...) and columns [c * tile_cols, ...)
        of the output seen as [batch, view_rows, view_cols]."""
        args, keep, device = self._args(tensors)
        out = _SignalLayout()
        self._ctx._call(self._lib.wsf_kernel_signal_layout, self._ptr, args, len(tensors), ctypes.byref(out))
        return {name: getattr(out, name) for name, _ in _SignalLayout._fields_}

    def _args(self, tensors):
        """The WsfTensor array of torch CUDA TENSORS, what keeps its shapes alive, and their device."""
        import torch
        codes = _dtype_codes(torch)
        args, keep = (_Tensor * len(tensors))(), []
        try:   # the common case at a launch's rate: CUDA tensors of wsfuse's dtypes, all on one device
            device, index = tensors[0].device, tensors[0].get_device()
            for i, t in enumerate(tensors):
                if t.get_device() != index or index < 0:
                    raise ValueError
                r = t.dim()
                shape, strides = _I64[r](*t.shape), _I64[r](*t.stride())
                keep.append((shape, strides))   # alive until the call returns
                args[i] = _Tensor(t.data_ptr(), codes[t.dtype], r, shape, strides)
            return args, keep, device
        except (AttributeError, IndexError, KeyError, TypeError, ValueError):
            pass   # the checks below say which argument is wrong
        args, keep, device = (_Tensor * len(tensors))(), [], None
        for i, t in enumerate(tensors):
            name = self.arg_names[i] if i < self.num_args else f"#{i}"
            if not isinstance(t, torch.Tensor) or not t.is_cuda:
                raise Error("WSF_ERR_INPUT", f"argument '{name}': expected a CUDA torch tensor, "
                            f"got {getattr(t, 'device', type(t).__name__)}")
            if device is not None and t.device != device:
                raise Error("WSF_ERR_INPUT", f"argument '{name}' is on {t.device}, "
                            f"argument '{self.arg_names[0]}' on {device}")
            device = t.device
            if t.dtype not in codes:
                raise Error("WSF_ERR_INPUT", f"argument '{name}': dtype {t.dtype} is not supported")
            shape, strides = (c_int64 * t.dim())(*t.shape), (c_int64 * t.dim())(*t.stride())
            keep.append((shape, strides))   # alive until the call returns
            args[i] = _Tensor(t.data_ptr(), codes[t.dtype], t.dim(), shape, strides)
        return args, keep, device

    def __call__(self, *inputs, stream=None):
        """Allocates the outputs (shapes from output_shapes), launches, and returns the
        output tensor, or a tuple of them when the spec has several.  An output written
        into an input (the spec's alias) is that input, changed in place."""
        import torch
        if not inputs:
            raise Error("WSF_ERR_INPUT", f"kernel '{self.name}' needs its inputs")
        outs = [inputs[self.arg_alias[i]] if self.arg_alias[i] is not None else
                torch.empty(s, dtype=getattr(torch, _TORCH_DTYPES[self.arg_dtypes[i]]), device=inputs[0].device)
                for i, s in enumerate(self.output_shapes(*inputs), self.num_inputs)]
        self.launch(*inputs, *outs, stream=stream)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def close(self):
        """Frees the kernel (and unloads its module)."""
        if getattr(self, "_ptr", None):
            self._lib.wsf_kernel_delete(self._ptr)
            self._ptr = None

    __del__ = close

    def __repr__(self):
        args = ", ".join(f"{'out ' if o else ''}{n}: {d}" for n, d, o in
                         zip(self.arg_names, self.arg_dtypes, self.arg_is_output))
        return f"<wsfuse.Kernel {self.name}({args})>"


# torch.library custom ops

_torch_ops = {}   # qualified name -> ((spec text, sizes, options), op): one op per name


def torch_op(spec, name=None, sizes=None, **options):
    """Registers fusion SPEC as a torch custom op and returns it (a torch.library
    CustomOpDef: call it like a function, or as torch.ops.NAMESPACE.NAME).

    SPEC is a spec file's path or the YAML text itself.  NAME is the op's name,
    "wsfuse::<fusion name>" by default ("ns::name", or "name" in namespace wsfuse).
    SIZES binds sizes no input names, and OPTIONS are Context options (cache_dir=...).

    The op takes the spec's inputs as CUDA tensors, allocates its outputs and launches
    on torch's current stream.  A kernel is compiled for each distinct binding of the
    sizes that the inputs' shapes imply (and each device), on the first call that
    needs it, and kept: a recompile happens only for new shapes.  A fake
    implementation derives the outputs' shapes and dtypes from the spec, so the op
    traces under torch.compile(fullgraph=True) without a graph break, with symbolic
    sizes too.  Inside CUDA graph capture the op launches without compiling,
    allocating device memory outside the graph's pool or synchronizing, once it has
    run at those sizes before the capture (a warm-up call); a first call at new
    sizes during capture is an error.  Empty inputs launch nothing.

    The op is differentiable: its backward is the spec's gradient as the compiler
    derives it (Context.grad_string, docs/spec.md "Gradients"), registered as the op
    "<name>_backward" (op.wsfuse.backward) and compiled at the first backward call
    at each size binding, like the forward; the forward saves its inputs (the
    backward recomputes what it needs of the forward's values), and every float
    input's gradient is computed, whichever are needed.  Where there is no such
    backward (an op with no gradient rule, such as topk; a gradient the kernel
    families cannot run in one kernel; an input written in place; the backward
    of a backward), an input that requires grad while grad mode is on is an error
    that says why (call the op under torch.no_grad() or torch.inference_mode(),
    or detach the input).

    Registering the same name again returns the same op if SPEC, SIZES and OPTIONS
    agree, and is an error otherwise.  op.wsfuse holds the compiled kernels."""
    import torch
    backward_of = options.pop("_backward_of", None)   # (the forward op this is the backward of)
    if "stop_after" in options:
        raise Error("WSF_ERR_USAGE", "torch_op compiles to cubins: stop_after is not an option here")
    if isinstance(spec, (str, os.PathLike)) and ("\n" not in str(spec)):
        path = os.fspath(spec)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise Error("WSF_ERR_IO", f"{path}: {e.strerror} (torch_op takes a spec file's path "
                        "or the spec's YAML text)") from None
        filename = path
    else:
        text = spec.decode() if isinstance(spec, bytes) else str(spec)
        filename = "<string>"
    sizes = {k: _int(v, f"size {k}") for k, v in (sizes or {}).items()}
    state = _TorchOp(text, filename, sizes, options)
    qualname = name or state.spec.name
    if "::" not in qualname:
        qualname = "wsfuse::" + qualname
    key = (text, sorted(sizes.items()), sorted((k, str(v)) for k, v in options.items()))
    if qualname in _torch_ops:
        old_key, op = _torch_ops[qualname]
        if old_key != key:
            raise Error("WSF_ERR_USAGE", f"torch op {qualname} is registered already, for another spec, "
                        "sizes or options: pass another name=")
        return op
    state.qualname = qualname
    op = torch.library.custom_op(qualname, state.impl_function(), mutates_args=state.mutated(),
                                 schema=state.schema())
    op.register_fake(state.fake)
    state.register_autograd(op, backward_of)
    op.wsfuse = state
    _torch_ops[qualname] = (key, op)
    return op


class _TorchOp:
    """What a torch_op keeps: the spec's kernel-IR compile (names, dtypes and the size
    names of every dim, for schemas and fake shapes) and a kernel per device and size
    binding.  Compiles and launches hold a lock: a context serves one thread at a time."""

    def __init__(self, text, filename, sizes, options):
        import threading
        import torch
        self.text, self.filename, self.sizes, self.options = text, filename, sizes, options
        self.spec = Context(sizes=sizes, stop_after="kernel-ir", **options).compile_string(text, filename)
        self.qualname = "wsfuse::" + self.spec.name
        k = self.spec
        self.in_dtypes = [getattr(torch, _TORCH_DTYPES[d]) for d in k.arg_dtypes[:k.num_inputs]]
        self.out_dtypes = [getattr(torch, _TORCH_DTYPES[d]) for d in k.arg_dtypes[k.num_inputs:]]
        self.alias = list(k.arg_alias[k.num_inputs:])   # per output: the input it is written into, or None
        self.names = None   # the schema's argument names
        self.kernels = {}   # (device index, ((size, extent), ...)) -> Kernel
        self.warm = set()   # keys of kernels launched at least once (module loaded)
        self.base = {}      # device index -> the kernel at the spec's own sizes, when one was needed
        self.lock = threading.Lock()

    def schema(self):
        """The op's schema: one Tensor per input, named as in the spec where torch allows; an
        input an output is written into is mutated (Tensor(a!)), and that output not returned."""
        import keyword
        import torch
        k = self.spec
        names = list(k.arg_names[:k.num_inputs])
        if any(keyword.iskeyword(n) or n in ("self", "out", "Tensor", "None", "True", "False") for n in names):
            names = [f"arg{i}" for i in range(len(names))]
        n = self.alias.count(None)
        outs = "Tensor" if n == 1 else "(" + ", ".join(["Tensor"] * n) + ")"
        marks = [f"({chr(97 + self.alias.index(i))}!)" if i in self.alias else "" for i in range(len(names))]
        schema = "(" + ", ".join(f"Tensor{m} {n}" for m, n in zip(marks, names)) + ") -> " + outs
        try:
            torch._C.parse_schema("wsfuse::x" + schema)
        except RuntimeError:
            names = [f"arg{i}" for i in range(len(names))]
            schema = "(" + ", ".join(f"Tensor{m} {n}" for m, n in zip(marks, names)) + ") -> " + outs
        self.names = names
        return schema

    def mutated(self):
        """The inputs the op writes in place (outputs with an alias), by their schema names."""
        if self.names is None:
            self.schema()
        return tuple(self.names[i] for i in self.alias if i is not None)

    def _returned(self, outs):
        """What the op returns: the outputs it does not write into an input (None for none)."""
        outs = [o for o, a in zip(outs, self.alias) if a is None]
        return None if not outs else outs[0] if len(outs) == 1 else tuple(outs)

    def _check(self, inputs):
        """Tensors of the spec's dtypes (ranks and sizes: Kernel._bind)."""
        import torch
        k = self.spec
        if len(inputs) != k.num_inputs:
            raise Error("WSF_ERR_INPUT", f"{self.qualname} takes {k.num_inputs} inputs, saw {len(inputs)}")
        for i, (x, dt) in enumerate(zip(inputs, self.in_dtypes)):
            if not isinstance(x, torch.Tensor):
                raise Error("WSF_ERR_INPUT", f"{self.qualname}: input '{k.arg_names[i]}' is a "
                            f"{type(x).__name__}, not a tensor")
            if x.dtype != dt:
                raise Error("WSF_ERR_INPUT", f"{self.qualname}: input '{k.arg_names[i]}' is {x.dtype}, "
                            f"the spec says {k.arg_dtypes[i]} ({dt})")

    def fake(self, *inputs):
        """The outputs as tensors without data (torch.compile, meta tensors)."""
        import torch

        def same(n, want, message):
            if isinstance(n, int) and isinstance(want, int):
                _same(n, want, f"{self.qualname}: {message}")
            else:   # symbolic: a guard or a runtime assert, not a Python branch
                torch._check(n == want, lambda: f"{self.qualname}: {message}")
        self._check(inputs)
        _, shapes = self.spec._bind(inputs, same)
        return self._returned([inputs[0].new_empty(s, dtype=dt) for s, dt in zip(shapes, self.out_dtypes)])

    def impl_function(self):
        """The op's implementation, named after the fusion (torch shows the name)."""
        def impl(*inputs):
            return self.run(*inputs)
        impl.__name__ = impl.__qualname__ = self.spec.name
        return impl

    def run(self, *inputs):
        """Compiles (once per device and size binding) and launches; no launch when empty."""
        import torch
        k = self.spec
        self._check(inputs)
        bound, shapes = k._bind(inputs, lambda n, want, m: _same(n, want, f"{self.qualname}: {m}"))
        device = inputs[0].device
        outs_empty = [0 in s for s in shapes]
        if any(outs_empty) or any(x.numel() == 0 for x in inputs):
            if not all(outs_empty):   # a reduction over nothing, or an output of other inputs
                i = outs_empty.index(False)
                raise Error("WSF_ERR_INPUT", f"{self.qualname}: output '{k.arg_names[k.num_inputs + i]}' "
                            f"would be {list(shapes[i])} from empty inputs, and wsfuse launches nothing "
                            "on empty tensors")
            return self._returned([torch.empty(s, dtype=dt, device=device)
                                   for s, dt in zip(shapes, self.out_dtypes)])
        if device.type != "cuda":
            raise Error("WSF_ERR_INPUT", f"{self.qualname}: input '{k.arg_names[0]}' is on {device}, "
                        "expected a CUDA tensor")
        # a transpose or permute of a contiguous tensor, dims expanded from none: its memory as it is, the
        # kernel compiled for that order (option layout: the input a permute and expand of its memory; a
        # transpose through shared memory, an expanded dim a broadcast)
        for i in self.alias:   # written in place: its own memory, as it is
            if i is not None and (not inputs[i].is_contiguous() or inputs[i].data_ptr() % 16):
                raise Error("WSF_ERR_INPUT", f"{self.qualname}: input '{k.arg_names[i]}' is written in place "
                            "(alias), and it is not contiguous and 16-byte aligned: pass such a tensor")
        lays = [None if x.is_contiguous() or i in self.alias else _layout(x) for i, x in enumerate(inputs)]
        layout = ";".join(f"{k.arg_names[i]}={lay[0]}" for i, lay in enumerate(lays) if lay)
        key = (device.index, tuple(sorted(bound.items())), layout)
        with self.lock, torch.cuda.device(device):
            if layout and key in self.kernels and self.kernels[key] is None:   # refused before: copies
                layout, key = "", key[:2] + ("",)
            kernel = self.kernels.get(key)
            if key not in self.warm and torch.cuda.is_current_stream_capturing():
                raise Error("WSF_ERR_USAGE", f"{self.qualname}: first call at sizes "
                            f"{dict(key[1])} on {device} inside CUDA graph capture: call the op once at "
                            "these sizes before capturing (the first call compiles and loads its kernel)")
            if kernel is None and layout:
                try:
                    kernel = self.kernels[key] = self._compile(device.index, bound, layout)
                except Error as e:   # views a kernel family does not read yet (a matmul's operand): copies
                    if e.status != "WSF_ERR_UNSUPPORTED":
                        raise
                    self.kernels[key] = None
                    layout, key = "", key[:2] + ("",)
                    kernel = self.kernels.get(key)
            if kernel is None:
                kernel = self.kernels[key] = self._compile(device.index, bound)
            if layout:   # each permuted input's memory, contiguous
                inputs = [lay[1] if lay else x for x, lay in zip(inputs, lays)]
            # contiguous and 16-byte aligned, or rows wider than a row where the kernel reads the argument
            # through a tensor map of its rows (a slice of the last dim); a copy for other views
            inputs = [x if x.data_ptr() % 16 == 0 and (x.is_contiguous() or (_row_strided(x) and
                                                                              kernel.row_strided(i)))
                      else x.clone(memory_format=torch.contiguous_format) for i, x in enumerate(inputs)]
            outs = [inputs[a] if a is not None else torch.empty(s, dtype=dt, device=device)
                    for s, dt, a in zip(shapes, self.out_dtypes, self.alias)]
            kernel.launch(*inputs, *outs)
            self.warm.add(key)
        return self._returned(outs)

    def _compile(self, device, bound, layout=""):
        """The kernel for sizes BOUND and LAYOUT (option layout: inputs given as permutes of their
        memory).  When the spec cannot be compiled at them (one row whose width breaks the 16-byte
        row rule, which a launch checks per shape instead), the kernel at the spec's own sizes, for
        the launch to check against the tensors."""
        options = {**self.options, "layout": layout} if layout else self.options
        try:
            return Context(sizes={**self.sizes, **bound}, **options).compile_string(self.text, self.filename)
        except Error as e:
            if e.status != "WSF_ERR_INPUT" or layout:   # (the spec's own sizes know no layout)
                raise
            if device not in self.base:
                try:
                    self.base[device] = Context(sizes=self.sizes, **self.options).compile_string(
                        self.text, self.filename)
                except Error:
                    raise e from None
            return self.base[device]

    def backward_op(self):
        """(op, None): the torch op of the spec's gradient, or (None, why there is none)."""
        if any(a is not None for a in self.alias):
            return None, "it writes an input in place (alias)"
        try:
            text = Context(sizes=self.sizes, **self.options).grad_string(self.text, self.filename)
            return torch_op(text, name=self.qualname + "_backward", sizes=self.sizes,
                            _backward_of=self.qualname, **self.options), None
        except Error as e:
            return None, e.message.split("\n")[0]

    def register_autograd(self, op, backward_of=None):
        """OP's autograd: the backward op (backward_op) with the inputs saved, or, where there is
        none, a refusal of inputs requiring grad (when grad mode is on) before anything runs:
        outputs silently cut off from the graph would be worse than an error."""
        import warnings
        import torch
        names, opoverload = self.spec.arg_names, op._opoverload
        self.backward, why = (None, f"it is the backward of {backward_of}: no double backward yet") \
            if backward_of else self.backward_op()
        if self.backward is not None:
            op.register_autograd(self._backward_function(), setup_context=self._setup_context)
            return

        def autograd(keyset, *inputs):
            if torch.is_grad_enabled():
                for n, x in zip(names, inputs):
                    if isinstance(x, torch.Tensor) and x.requires_grad:
                        raise Error("WSF_ERR_UNSUPPORTED", f"{self.qualname}: input '{n}' requires grad, "
                                    f"and the op has no backward ({why}): call it under torch.no_grad() "
                                    f"or torch.inference_mode(), or pass {n}.detach()")
            with torch._C._AutoDispatchBelowAutograd():
                return opoverload.redispatch(keyset & torch._C._after_autograd_keyset, *inputs)
        with warnings.catch_warnings():   # "Overriding a previously registered kernel": meant
            warnings.simplefilter("ignore", UserWarning)
            op._lib.impl(op._name, autograd, "Autograd", with_keyset=True, allow_override=True)

    def _setup_context(self, ctx, inputs, output):
        """Saves the forward's inputs, and its outputs' shapes and dtypes (an unused output's
        gradient is zeros)."""
        outs = output if isinstance(output, tuple) else (output,)
        ctx.save_for_backward(*inputs)
        ctx.out_meta = [(o.shape, o.dtype) for o in outs]

    def _backward_function(self):
        """backward(ctx, *grads): the backward op on the saved inputs it reads (by name) and
        grad_OUT per output; a gradient per input, None for those with none (not float)."""
        import torch
        k, bk = self.spec, self.backward.wsfuse.spec
        ins = list(k.arg_names[:k.num_inputs])
        outs = [n for n, a in zip(k.arg_names[k.num_inputs:], self.alias) if a is None]

        def backward(ctx, *grads):
            saved = ctx.saved_tensors
            have = dict(zip(ins, saved))
            for n, g, (shape, dt) in zip(outs, grads, ctx.out_meta):
                have["grad_" + n] = g if g is not None else torch.zeros(shape, dtype=dt, device=saved[0].device)
            got = self.backward(*[have[n] for n in bk.arg_names[:bk.num_inputs]])
            got = dict(zip(bk.arg_names[bk.num_inputs:], got if isinstance(got, tuple) else (got,)))
            return tuple(got.get("grad_" + n) for n in ins)
        return backward
