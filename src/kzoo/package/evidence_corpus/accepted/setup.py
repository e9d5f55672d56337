from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="fused_rope",
    version="0.2.0",
    ext_modules=[
        CUDAExtension(
            "fused_rope",
            ["rope.cu", "binding.cc"],
            extra_compile_args={"cxx": ["-O3"], "nvcc": ["-O3", "-gencode=arch=compute_90a,code=sm_90a"]},
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
