# cmake --install: header, both libraries, pkg-config file and a CMake package
# (find_package(disttrain) -> disttrain::disttrain, the shared library).
include(CMakePackageConfigHelpers)

install(FILES "${PROJECT_SOURCE_DIR}/include/dt_c_api.h" DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
install(TARGETS disttrain EXPORT disttrainTargets
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
install(TARGETS disttrain_static ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}")

set(_dt_cmake_dir "${CMAKE_INSTALL_LIBDIR}/cmake/disttrain")
install(EXPORT disttrainTargets NAMESPACE disttrain:: DESTINATION "${_dt_cmake_dir}")
configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/disttrainConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/disttrainConfig.cmake" INSTALL_DESTINATION "${_dt_cmake_dir}")
# Before 1.0 a minor release may break the ABI, hence SameMinorVersion.
write_basic_package_version_file("${PROJECT_BINARY_DIR}/disttrainConfigVersion.cmake"
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/disttrainConfig.cmake" "${PROJECT_BINARY_DIR}/disttrainConfigVersion.cmake"
  DESTINATION "${_dt_cmake_dir}")

# Libraries a static link of libdisttrain.a needs besides libdisttrain
# (pkg-config --static): what src/CMakeLists.txt links the objects with, in
# linker flags, dependents before their dependencies. The FlatBuffers code the
# library uses is header-only. tests/packaging/install_and_consume.sh links a
# consumer this way.
set(DT_PC_LIBS_PRIVATE "-lnng -lstdc++ -lm -lpthread -lz -ldnnl -lopenblas -fopenmp")
if(DT_HAVE_CUDA)
  string(APPEND DT_PC_LIBS_PRIVATE " -L${CUDAToolkit_LIBRARY_DIR} -lcublas -lcudart_static -ldl -lrt")
endif()
if(DT_HAVE_CUDNN)
  string(APPEND DT_PC_LIBS_PRIVATE " ${DT_CUDNN_LIBRARY}")
endif()
if(DT_HAVE_NCCL)
  string(APPEND DT_PC_LIBS_PRIVATE " ${DT_NCCL_LIBRARY}")
endif()
configure_file("${PROJECT_SOURCE_DIR}/pkgconfig/disttrain.pc.in" "${PROJECT_BINARY_DIR}/disttrain.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/disttrain.pc" DESTINATION "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
