package disttrain

import (
	"fmt"
	"sync"

	"github.com/disttrain/disttrain/bindings/go/internal/capi"
)

// GeneratedVersion is the library version this binding was generated for
// (the header's DT_VERSION_* when SWIG ran).
const GeneratedVersion = capi.DT_VERSION_MAJOR*10000 + capi.DT_VERSION_MINOR*100 + capi.DT_VERSION_PATCH

var (
	versionOnce sync.Once
	versionErr  error
)

// versionMismatch compares the loaded library's version number with the one
// the binding was generated for.
func versionMismatch(loaded, generated uint32) error {
	if loaded == generated {
		return nil
	}
	return errorf(StatusProtocol,
		"libdisttrain version %s is loaded, but this Go binding was generated for %s: rebuild the binding against the installed library, or point pkg-config and the loader (LD_LIBRARY_PATH) at the matching libdisttrain",
		versionText(loaded), versionText(generated))
}

func versionText(v uint32) string {
	return fmt.Sprintf("%d.%d.%d", v/10000, v/100%100, v%100)
}

// CheckVersion reports whether the loaded libdisttrain is the version the
// binding was generated for. Every constructor calls it once first, so a
// mismatch surfaces as a clear error before any other call.
func CheckVersion() error {
	versionOnce.Do(func() {
		versionErr = versionMismatch(uint32(capi.Dt_version()), uint32(GeneratedVersion))
	})
	return versionErr
}

// Version is the loaded library's "MAJOR.MINOR.PATCH".
func Version() string { return capi.Dt_version_string() }

// BuildInfo says what the loaded library was compiled with.
type BuildInfo struct {
	VersionMajor, VersionMinor, VersionPatch  int
	WithCUDA, WithCUDNN, WithNCCL, WithOneDNN bool
	CUDARuntimeVersion, CUDNNVersion          int
	NCCLVersion, OneDNNVersion                int
	GPUCount                                  int
}

// GetBuildInfo reads the loaded library's build information.
func GetBuildInfo() (BuildInfo, error) {
	if err := CheckVersion(); err != nil {
		return BuildInfo{}, err
	}
	c := capi.NewDt_build_info()
	defer capi.DeleteDt_build_info(c)
	if err := check(capi.Dt_build_info_init(c)); err != nil {
		return BuildInfo{}, err
	}
	if err := check(capi.Dt_build_info_get(c)); err != nil {
		return BuildInfo{}, err
	}
	return BuildInfo{
		VersionMajor: c.GetVersion_major(), VersionMinor: c.GetVersion_minor(), VersionPatch: c.GetVersion_patch(),
		WithCUDA: c.GetWith_cuda() != 0, WithCUDNN: c.GetWith_cudnn() != 0,
		WithNCCL: c.GetWith_nccl() != 0, WithOneDNN: c.GetWith_onednn() != 0,
		CUDARuntimeVersion: c.GetCuda_runtime_version(), CUDNNVersion: c.GetCudnn_version(),
		NCCLVersion: c.GetNccl_version(), OneDNNVersion: c.GetOnednn_version(),
		GPUCount: c.GetGpu_count(),
	}, nil
}
