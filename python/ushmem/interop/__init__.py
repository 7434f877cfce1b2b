"""Interop with array libraries: ``ushmem.interop.torch`` and ``ushmem.interop.numpy``.

Import the submodule you need; neither torch nor numpy is imported by ``ushmem`` itself."""
