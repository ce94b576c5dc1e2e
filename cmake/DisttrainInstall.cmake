# cmake --install: header, both libraries, pkg-config file and a CMake package
# (find_package(disttrain) -> disttrain::disttrain, the shared library;
# COMPONENTS static adds disttrain::disttrain_static). Both the package config
# and the .pc file locate the prefix from their own place, so an install tree
# may be staged or moved. Install components: runtime (the shared library)
# and dev (the rest), which the Debian packages follow
# (cmake/DisttrainPackaging.cmake).
include(CMakePackageConfigHelpers)

install(FILES "${PROJECT_SOURCE_DIR}/include/dt_c_api.h" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}" COMPONENT dev)
install(TARGETS disttrain EXPORT disttrainTargets
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT runtime NAMELINK_COMPONENT dev
  RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT runtime)
install(TARGETS disttrain_static EXPORT disttrainStaticTargets
  ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT dev)

set(_dt_cmake_dir "${CMAKE_INSTALL_LIBDIR}/cmake/disttrain")
install(EXPORT disttrainTargets NAMESPACE disttrain:: DESTINATION "${_dt_cmake_dir}" COMPONENT dev)
# disttrain::disttrain_static, loaded by find_package(disttrain COMPONENTS
# static) only, since it makes the consumer find nng, oneDNN, OpenMP... too.
install(EXPORT disttrainStaticTargets NAMESPACE disttrain:: DESTINATION "${_dt_cmake_dir}" COMPONENT dev)
# What disttrain::disttrain_static names as disttrain::<lib>, for the
# package config to find.
set(DT_CONFIG_CUDA_LIBS)
if(DT_HAVE_CUDNN)
  list(APPEND DT_CONFIG_CUDA_LIBS cudnn)
endif()
if(DT_HAVE_NCCL)
  list(APPEND DT_CONFIG_CUDA_LIBS nccl)
endif()
configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/disttrainConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/disttrainConfig.cmake" INSTALL_DESTINATION "${_dt_cmake_dir}")
# Before 1.0 a minor release may break the ABI, hence SameMinorVersion.
write_basic_package_version_file("${PROJECT_BINARY_DIR}/disttrainConfigVersion.cmake"
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/disttrainConfig.cmake" "${PROJECT_BINARY_DIR}/disttrainConfigVersion.cmake"
  DESTINATION "${_dt_cmake_dir}" COMPONENT dev)

# Libraries a static link of libdisttrain.a needs besides libdisttrain
# (pkg-config --static): what src/CMakeLists.txt links the objects with
# (_dt_link_deps, nng, and oneDNN's own -ldl), as linker flags, dependents
# before their dependencies, and never as a file of this machine (a CUDA
# build adds the toolkit's directory, below). The FlatBuffers code the
# library uses is header-only, nlohmann_json too.
# tests/packaging/install_and_consume.sh links a consumer this way.
set(DT_PC_LIBS_PRIVATE "-lnng -lmbedcrypto -ldnnl -lopenblas -lz -ljpeg -lpng16 -fopenmp -lstdc++ -lm -lpthread -ldl")
if(DT_HAVE_CUDA)
  # The CUDA libraries live in the toolkit's directory (NVIDIA's
  # /usr/local/cuda/lib64, with cuDNN and NCCL copied there or elsewhere),
  # which the linker does not search by default: -L names that directory,
  # where the toolkit is installed, not anything of the build tree.
  set(_dt_pc_cuda_dirs "${CUDAToolkit_LIBRARY_DIR}")
  foreach(_lib IN ITEMS DT_CUDNN_LIBRARY DT_NCCL_LIBRARY)
    if(${_lib})
      get_filename_component(_dir "${${_lib}}" DIRECTORY)
      list(APPEND _dt_pc_cuda_dirs "${_dir}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES _dt_pc_cuda_dirs)
  foreach(_dir IN LISTS _dt_pc_cuda_dirs)
    if(NOT _dir IN_LIST CMAKE_C_IMPLICIT_LINK_DIRECTORIES)
      string(APPEND DT_PC_LIBS_PRIVATE " -L${_dir}")
    endif()
  endforeach()
  if(DT_HAVE_CUDNN)
    string(APPEND DT_PC_LIBS_PRIVATE " -lcudnn")
  endif()
  if(DT_HAVE_NCCL)
    string(APPEND DT_PC_LIBS_PRIVATE " -lnccl")
  endif()
  string(APPEND DT_PC_LIBS_PRIVATE " -lcublas -lcudart_static -lrt")
endif()

# The .pc file finds its prefix from where it lies (${pcfiledir}), so that
# `cmake --install build --prefix X`, a DESTDIR or dpkg --root staging, or a
# moved install tree all give the paths of X. Absolute LIBDIR or INCLUDEDIR
# (a packager's choice) are kept as given.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(DT_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(DT_PC_LIBDIR "${CMAKE_INSTALL_FULL_LIBDIR}")
  set(DT_PC_INCLUDEDIR "${CMAKE_INSTALL_FULL_INCLUDEDIR}")
else()
  file(RELATIVE_PATH _dt_pc_up "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
  string(REGEX REPLACE "/$" "" _dt_pc_up "${_dt_pc_up}")
  set(DT_PC_PREFIX "\${pcfiledir}/${_dt_pc_up}")
  set(DT_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
  set(DT_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
configure_file("${PROJECT_SOURCE_DIR}/pkgconfig/disttrain.pc.in" "${PROJECT_BINARY_DIR}/disttrain.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/disttrain.pc" DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig" COMPONENT dev)
