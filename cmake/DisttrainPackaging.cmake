# Debian packages, made by `cpack -G DEB` in a build tree from the install()
# rules' components:
#
#   libdisttrain<major>   runtime: libdisttrain.so.<major> (component runtime)
#   libdisttrain-dev      header, libdisttrain.so link, libdisttrain.a,
#                         disttrain.pc, the CMake package (component dev)
#   disttrain-tools       dtrun and dt-node (component tools)
#
# CPack rather than debhelper: the packages come from the same install()
# rules that `cmake --install` and the tests use, so what the .debs hold and
# what an install holds cannot drift, and no debian/ directory has to follow
# every new file. dpkg-shlibdeps computes the Depends of the ELF files;
# only the -dev package's dependencies on other -dev packages (for
# pkg-config --static and find_package COMPONENTS static) are named by hand,
# since no tool derives them.
#
# Configure with -DCMAKE_INSTALL_PREFIX=/usr for Debian's multiarch libdir
# (lib/x86_64-linux-gnu); a tree configured for /usr/local packages into
# /usr/lib, which the loader searches too.
#
# A CUDA build links cuBLAS and cuDNN/NCCL from the CUDA toolkit, which no
# Debian package of ours provides: its runtime package is the variant
# libdisttrain<major>-cuda (Provides and Conflicts libdisttrain<major>), and
# the toolkit is a documented prerequisite rather than a Depends.
set(_dt_runtime_package "libdisttrain${PROJECT_VERSION_MAJOR}")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME disttrain)
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_PACKAGE_CONTACT "disttrain developers <dev@disttrain.org>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev tools)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# dt-node's libdisttrain.so.<major> is in another component's staging tree:
# dpkg-shlibdeps finds it here, and the tools package's Depends on the
# runtime package comes from the component dependency below.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "${PROJECT_BINARY_DIR}")
if(DT_HAVE_CUDA)
  # cuBLAS and the rest, for dpkg-shlibdeps to find (and, being in no
  # package, to leave out of the Depends).
  list(APPEND CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS "${CUDAToolkit_LIBRARY_DIR}")
endif()
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)

set(CPACK_COMPONENT_DEV_DEPENDS runtime)
set(CPACK_COMPONENT_TOOLS_DEPENDS runtime)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME "${_dt_runtime_package}")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION "${PROJECT_DESCRIPTION}: shared library")
if(DT_HAVE_CUDA)
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME "${_dt_runtime_package}-cuda")
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_PROVIDES "${_dt_runtime_package}")
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONFLICTS "${_dt_runtime_package}")
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_REPLACES "${_dt_runtime_package}")
endif()

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libdisttrain-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libnng-dev, libmbedtls-dev, libdnnl-dev, ocl-icd-opencl-dev, libopenblas-dev, zlib1g-dev, libjpeg62-turbo-dev, libpng-dev")
set(CPACK_COMPONENT_DEV_DESCRIPTION
  "${PROJECT_DESCRIPTION}: development files\n The C header dt_c_api.h, the static library, disttrain.pc and the CMake package disttrain.")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME disttrain-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION science)
# dtrun --tls makes its throw-away CA with the openssl tool.
set(CPACK_DEBIAN_TOOLS_PACKAGE_RECOMMENDS "openssl")
set(CPACK_COMPONENT_TOOLS_DESCRIPTION
  "${PROJECT_DESCRIPTION}: job tools\n dtrun starts a training job; dt-node runs a scheduler or a server.")

include(CPack)
