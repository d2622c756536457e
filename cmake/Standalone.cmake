# What a standalone configure of kernels/ or calibrate/ (the device machine's builds, which lack
# the top-level build's Debian packages) sets as the top-level build does: C++20 and CUDA C++20
# without extensions, Release unless told, the CUDA toolkit and our warnings. Included right after
# the directory's own project() call.
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_CUDA_STANDARD 20)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
if(NOT CMAKE_BUILD_TYPE)
  set(CMAKE_BUILD_TYPE Release CACHE STRING "Build type" FORCE)
endif()
find_package(CUDAToolkit REQUIRED)
set(METRONOME_HAVE_CUDA ON)
include(${CMAKE_CURRENT_LIST_DIR}/Warnings.cmake)
