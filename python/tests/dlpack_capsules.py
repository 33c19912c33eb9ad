"""DLPack capsules made by hand (ctypes) over NumPy memory: a producer whose every field a test
chooses (device, dtype, strides, version) and whose deleter counts its calls."""

import ctypes

import numpy as np

c_int64_p = ctypes.POINTER(ctypes.c_int64)


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int),
        ("dtype", DLDataType), ("shape", c_int64_p), ("strides", c_int64_p),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [
    ("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    pass


VERSIONED_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))
DLManagedTensorVersioned._fields_ = [
    ("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
    ("deleter", VERSIONED_DELETER), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]

CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

api = ctypes.pythonapi
api.PyCapsule_New.restype = ctypes.py_object
api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, CAPSULE_DESTRUCTOR]
api.PyCapsule_GetName.restype = ctypes.c_char_p
api.PyCapsule_GetName.argtypes = [ctypes.py_object]
api.PyCapsule_GetPointer.restype = ctypes.c_void_p
api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
api.PyCapsule_IsValid.restype = ctypes.c_int
api.PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]

# Everything ctypes must keep alive while a capsule may still call back into it.
_alive = []


# DLPack 1.0's flags of a versioned capsule.
READ_ONLY, IS_COPIED = 1, 2


class Producer:
    """Owns `array` and hands it out as one capsule; `deleted` counts deleter calls. `flags`
    (READ_ONLY, IS_COPIED) go into a versioned capsule."""

    def __init__(self, array, device=(1, 0), dtype=None, strides="numpy", version=None,
                 byte_offset=0, data_offset=0, on_delete=None, flags=0):
        self.array = array
        self.deleted = 0
        self.on_delete = on_delete  # called first, on the thread that hands the memory back
        self.shape = (ctypes.c_int64 * max(array.ndim, 1))(*array.shape)
        if strides == "numpy":
            strides = [s // array.itemsize for s in array.strides]
        self.strides = None if strides is None else (ctypes.c_int64 * max(array.ndim, 1))(*strides)
        code = {"f": 2, "i": 0, "u": 1, "b": 6}[array.dtype.kind]
        dl = DLTensor(
            ctypes.c_void_p(array.ctypes.data + data_offset), DLDevice(*device), array.ndim,
            DLDataType(*(dtype or (code, array.itemsize * 8, 1))),
            ctypes.cast(self.shape, c_int64_p),
            ctypes.cast(self.strides, c_int64_p) if self.strides is not None else None,
            byte_offset)
        self.name = b"dltensor_versioned" if version else b"dltensor"
        if version:
            self.deleter = VERSIONED_DELETER(self._on_delete)
            self.managed = DLManagedTensorVersioned(DLPackVersion(*version), None, self.deleter,
                                                    flags, dl)
        else:
            self.deleter = DELETER(self._on_delete)
            self.managed = DLManagedTensor(dl, None, self.deleter)
        self.destructor = CAPSULE_DESTRUCTOR(self._on_capsule_destroyed)
        _alive.append(self)

    def _on_delete(self, _managed):
        if self.on_delete:
            self.on_delete()
        self.deleted += 1

    def _on_capsule_destroyed(self, capsule):
        # As every producer's: a capsule nobody consumed hands its tensor back itself.
        if api.PyCapsule_IsValid(capsule, self.name):
            self.deleter(ctypes.cast(ctypes.addressof(self.managed),
                                     ctypes.POINTER(type(self.managed))))

    def capsule(self):
        return api.PyCapsule_New(ctypes.addressof(self.managed), self.name, self.destructor)


def capsule_name(capsule):
    return api.PyCapsule_GetName(capsule).decode()


def versioned_header(capsule):
    """(major, minor, flags) of a versioned capsule hal made."""
    pointer = api.PyCapsule_GetPointer(capsule, b"dltensor_versioned")
    managed = ctypes.cast(pointer, ctypes.POINTER(DLManagedTensorVersioned)).contents
    return managed.version.major, managed.version.minor, managed.flags


def call_deleter_and_leave(capsule):
    """What a consumer that fails after taking the tensor does (PyTorch 1.13 importing OpenCL
    memory): calls the capsule's deleter yet leaves the capsule unconsumed, under its name."""
    name = api.PyCapsule_GetName(capsule)
    pointer = api.PyCapsule_GetPointer(capsule, name)
    kind = DLManagedTensorVersioned if name == b"dltensor_versioned" else DLManagedTensor
    managed = ctypes.cast(pointer, ctypes.POINTER(kind))
    managed.contents.deleter(managed)


def float_array(n=12):
    return np.arange(n, dtype=np.float32).reshape(3, -1) * 0.5
