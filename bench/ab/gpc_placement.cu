// gpc_placement.cu: which SMs share a GPC, and where the hardware puts the CTAs
// of a plain launch and of a cluster launch (issue 17: what L2 serves a
// one-wave GEMM depends on which tiles the SMs of one GPC hold).
//
//   nvcc -O2 -arch=sm_90a -o /tmp/gpc bench/ab/gpc_placement.cu && /tmp/gpc
//
// The CTAs of a cluster always share a GPC, so SMs that ever host one cluster
// are joined (union-find over launches of clusters of 2 to 16 CTAs, one CTA an
// SM: 200 KiB of shared memory each); SMs no cluster of three or more ever
// reached stay in groups of two.  Prints JSON: "gpcs", the groups of SM ids;
// "plain", for grids of all SMs, 128 and 64 CTAs, three launches each, the SM
// of each blockIdx; "cN_G_R", the same for clusters of N in a grid of G.
#include <cstdio>
#include <vector>
#include <map>
#include <cuda_runtime.h>
__global__ void where(int *out)
{
	extern __shared__ char pad[];
	unsigned s;
	asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
	if (threadIdx.x == 0) { out[blockIdx.x] = (int)s; pad[0] = 0; }
	__nanosleep(20000);   // hold the SM so that every CTA is resident at once
}
static int find(std::vector<int> &p, int x) { return p[x] == x ? x : p[x] = find(p, p[x]); }
int main()
{
	int nsm; cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, 0);
	int smem = 200 * 1024;
	cudaFuncSetAttribute(where, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
	cudaFuncSetAttribute(where, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
	int *d; cudaMalloc(&d, 4096 * 4);
	std::vector<int> par(1024); for (int i = 0; i < 1024; i++) par[i] = i;
	int maxsm = 0;
	for (int rep = 0; rep < 4; rep++)
	for (int cs : {16, 14, 12, 10, 9, 8, 6, 4, 3, 2}) {
		cudaLaunchConfig_t cfg = {}; cudaLaunchAttribute a[1];
		a[0].id = cudaLaunchAttributeClusterDimension; a[0].val.clusterDim.x = cs; a[0].val.clusterDim.y = 1; a[0].val.clusterDim.z = 1;
		cfg.blockDim = dim3(128); cfg.dynamicSmemBytes = smem; cfg.attrs = a; cfg.numAttrs = 1;
		cfg.gridDim = dim3(cs);
		int nc = 0;
		if (cudaOccupancyMaxActiveClusters(&nc, where, &cfg) != cudaSuccess || nc < 1) { cudaGetLastError(); continue; }
		for (int grid : {nc * cs, (nc - rep % 3) * cs}) {
			if (grid < cs) continue;
			cfg.gridDim = dim3(grid);
			if (cudaLaunchKernelEx(&cfg, where, d) != cudaSuccess) { cudaGetLastError(); continue; }
			std::vector<int> h(grid); cudaMemcpy(h.data(), d, grid * 4, cudaMemcpyDeviceToHost);
			for (int b = 0; b < grid; b++) { if (h[b] > maxsm) maxsm = h[b]; par[find(par, h[b])] = find(par, h[b - b % cs]); }
			if (rep == 0 && grid == nc * cs) fprintf(stderr, "cluster %d: %d clusters at once\n", cs, nc);
		}
	}
	std::map<int, std::vector<int>> g;
	for (int s = 0; s <= maxsm; s++) g[find(par, s)].push_back(s);
	printf("{\"nsm\": %d, \"gpcs\": [", nsm);
	int first = 1;
	for (auto &kv : g) { printf(first ? "[" : ", ["); first = 0; for (size_t i = 0; i < kv.second.size(); i++) printf(i ? ", %d" : "%d", kv.second[i]); printf("]"); }
	printf("], \"plain\": {");
	first = 1;
	for (int grid : {nsm, 128, 64}) for (int rep = 0; rep < 3; rep++) {
		where<<<grid, 384, smem>>>(d);
		std::vector<int> h(grid); cudaMemcpy(h.data(), d, grid * 4, cudaMemcpyDeviceToHost);
		printf(first ? "\"%d_%d\": [" : ", \"%d_%d\": [", grid, rep); first = 0;
		for (int b = 0; b < grid; b++) printf(b ? ", %d" : "%d", h[b]);
		printf("]");
	}
	for (int cs : {2, 4}) for (int grid : {132, 128}) for (int rep = 0; rep < 2; rep++) {
		cudaLaunchConfig_t cfg = {}; cudaLaunchAttribute a[1];
		a[0].id = cudaLaunchAttributeClusterDimension; a[0].val.clusterDim.x = cs; a[0].val.clusterDim.y = 1; a[0].val.clusterDim.z = 1;
		cfg.blockDim = dim3(384); cfg.dynamicSmemBytes = smem; cfg.attrs = a; cfg.numAttrs = 1; cfg.gridDim = dim3(grid / cs * cs);
		if (cudaLaunchKernelEx(&cfg, where, d) != cudaSuccess) { cudaGetLastError(); continue; }
		std::vector<int> h(grid); cudaMemcpy(h.data(), d, grid / cs * cs * 4, cudaMemcpyDeviceToHost);
		printf(", \"c%d_%d_%d\": [", cs, grid, rep);
		for (int b = 0; b < grid / cs * cs; b++) printf(b ? ", %d" : "%d", h[b]);
		printf("]");
	}
	printf("}}\n");
	return cudaDeviceSynchronize() != cudaSuccess;
}
