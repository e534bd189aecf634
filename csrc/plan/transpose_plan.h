// The transposition planner: which algorithm moves a (batch, rows, cols) tensor of `esize`-byte elements into
// its (batch, cols, rows) transpose in place, with which parameters, and how many bytes of scratch it needs.
// Plain C++ (no framework types) so that tests/cpp can check it exhaustively.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/c2r.h"

namespace torch_inplace {
namespace plan {

enum class Algo : int {
  Auto = 0,   // let the planner choose
  Noop,       // empty tensor, or rows == 1 or cols == 1: the bytes already are the transpose
  Square,     // rows == cols: swap tile pairs across the diagonal
  C2R,        // Catanzaro columns-to-rows decomposition of the rows x cols matrix (paper 003)
  R2C,        // Catanzaro's inverse decomposition applied to the cols x rows view (paper 003)
  Skinny,     // one side <= kSkinnyMax (AoS <-> SoA): the short side kept on chip / in cache (CPU: sequence 2.1)
  Tiled31,    // Gomez-Luna/Sung sequence 3.1: 100! (super-elements of n), 0010! (tiles), 0100! (paper 000)
  Tiled32,    // sequence 3.2: 0100!, 0010!, 100!
  Tiled21,    // sequence 2.1: 010! (m x N tiles on chip), 100!
  Tiled22,    // sequence 2.2: 100!, 010! (M x n tiles on chip)
  Padded,     // pad to a well-factored shape inside the storage's slack, tile, unpad (paper 000 sec. 6.2)
  Cut,        // cut the awkward rows/columns into scratch, tile the rest, re-insert (Karlsson, paper 004)
  OnChip,     // GPU: the whole tensor fits in shared memory: one cooperative kernel, read all, grid barrier, write.
              // CPU: small matrices, runs of whole matrices copied into a worker's buffer and written back transposed
  kCount
};

// "1 row", "3 rows": a count and its noun, for the plans' explanations (`many` defaults to `one` + "s").
inline std::string counted(int64_t n, const std::string& one, const std::string& many = std::string()) {
  return std::to_string(n) + " " + (n == 1 ? one : (many.empty() ? one + "s" : many));
}

const char* algo_name(Algo a);
// Parses "auto", "square", "c2r", ... ; returns false for an unknown name.
bool algo_from_name(const std::string& name, Algo* out);
std::vector<std::string> algo_names();

enum class Backend : int { CPU = 0, CUDA = 1 };

// What the planner needs to know about where the tensor lives.
struct DeviceCaps {
  Backend backend = Backend::CPU;
  int num_threads = 1;             // CPU: intra-op threads
  int num_sms = 0;                 // GPU: multiprocessors
  int64_t smem_per_block = 0;      // GPU: opt-in shared memory per block, bytes
  int warp_size = 32;              // GPU: warp / wavefront width
  int64_t l2_bytes = 0;            // GPU: L2 size
  int cc_major = 0;                // GPU: compute capability (CUDA) / gfx major (HIP)
  int max_cluster = 1;             // GPU: blocks per thread-block cluster with distributed shared memory (1: none)
};

struct Problem {
  int64_t batch = 1;
  int64_t rows = 0;                // the matrix is rows x cols (row-major) and becomes cols x rows
  int64_t cols = 0;
  int64_t esize = 4;               // element size in bytes: 1, 2, 4, 8 or 16
  int64_t slack_bytes = 0;         // bytes of storage past the tensor that the op may use (padding)
};

constexpr int64_t kSkinnyMax = 64;     // short side, in elements, for the skinny (AoS <-> SoA) path
constexpr int64_t kCpuPanelBytes = 128; // CPU: columns handled together in the column steps (one panel)

struct Plan {
  Algo algo = Algo::Noop;
  Problem problem;
  int64_t scratch_bytes = 0;       // total scratch the op allocates (through the workspace helper)
  int64_t workspace_limit = -1;    // the limit it was planned under (-1: none), which its scratch is checked against
  std::string reason;              // why this algorithm (the "explain" text)
  // Catanzaro parameters: C2R works on (m, n) = (rows, cols); R2C on (m, n) = (cols, rows).
  c2r::Params c2r;
  int64_t panel = 0;               // CPU: columns per panel in the column steps
  int64_t threads = 1;             // CPU: threads the scratch is sized for
  // Tiled algorithms: the matrix is (M', m, N', n) with rows = M'*m, cols = N'*n.
  int64_t tile_m = 0, tile_n = 0;
  // Padding / cutting: rows x cols is treated as (rows + pad_rows) x (cols + pad_cols), or the last cut_rows
  // rows / cut_cols columns are set aside.
  int64_t pad_rows = 0, pad_cols = 0, cut_rows = 0, cut_cols = 0;
  // GPU: implementation detail chosen by the GPU planner (kernel variant, threads per block, ...).
  int64_t variant = 0;
  // GPU Catanzaro steps (gpu_plan.cpp). Column steps: panels of col_width columns held by a cluster of
  // col_cluster blocks (col_rows rows each) in distributed shared memory; col_cluster == 0 selects the universal
  // column kernels (reflections + cycle following of q from a leader bitmap at scratch offset bitmap_off).
  // Row shuffle: row_block rows per block in shared memory, or one row per cluster of row_cluster blocks, or
  // row_slots global row slots at scratch offset slots_off.
  struct GpuSteps {
    int64_t col_width = 0, col_cluster = 0, col_rows = 0, col_smem = 0;
    // Or (grid_width > 0) panels of grid_width columns through the shared memory of the whole GPU: one
    // cooperative kernel, grid_rows rows of the result per block (kernels/transpose/grid_columns.cuh).
    int64_t grid_width = 0, grid_rows = 0, grid_blocks = 0, grid_smem = 0;
    int64_t grid_buffers = 1;  // 2: a panel is written back while the next one is gathered
    int64_t grid_row_lanes = 0;  // lanes per band row of the gather (0: the kernel's rule, grid_row_lanes<T>)
    int64_t grid_async = 0;      // 1: the gather copies global -> shared with cp.async (4/8/16-byte elements)
    int64_t grid_linear = 1;     // 1: the column shuffles' gather steps its indices linearly (0: the general gather)
    int64_t grid_split = 1;      // > 1: each panel in grid_split column parts, grid_rows slots per block (no rotations)
    int64_t row_block = 0, row_smem = 0, row_slots = 0;
    int64_t row_walk_c0 = 1;  // C2R row walks drop their c terms where c divides the block size (0: never)
    int64_t row_walk_fit = 1;  // C2R, c > 1: a block size that c divides where one is close (c2r_walk_threads)
    // The shared-memory row kernels compiled for row_min_blocks (3 or 4) blocks of 512 threads per SM (0: the wide
    // bound); row_bounds_denser: only where that variant fits more blocks per SM than the wide one (the launcher asks
    // the occupancy API).
    int64_t row_min_blocks = 0, row_bounds_denser = 1;
    int64_t row_cluster = 0, row_part = 0;  // a row split over row_cluster blocks of row_part elements
    // Or (fuse_head > 0; c > 1, one matrix, rows in shared memory) the row shuffle fused with the C2R
    // pre-rotation / R2C post-rotation: each block's chunk of rows starts with a head of fuse_head >= c - 1 rows,
    // then bands of fuse_rows rows; fuse_smem bytes per block (head + band), at most fuse_flags_bytes / 4 blocks,
    // one flag word each at fuse_flags_off (kernels/transpose/catanzaro.cuh).
    int64_t fuse_head = 0, fuse_rows = 0, fuse_smem = 0, fuse_flags_off = 0, fuse_flags_bytes = 0;
    int64_t fuse_bufs = 0;  // band buffers (2: the next band's copies in flight during the current band's shuffle)
    int64_t fuse_runs = 0;  // C2R: rows staged by runs of b columns with 16-byte copies (0: element by element)
    // Skinny with super-elements: the N x F matrix is (N/super, super, F); tiles of super x F are transposed on
    // chip and the (N/super) x F matrix of super-element rows goes through Catanzaro (c2r = Params(N/super, F)).
    int64_t super = 1;
    int64_t bitmap_off = 0, bitmap_bytes = 0, slots_off = 0;
    // Skinny by sequence 2.1 (sk_k > 0; gpu_plan.cpp): k x F tiles on chip (010!), then the (Mp, F, k) array of
    // k-element super-elements by cycle following (100!); N mod k remainder rows cut (Karlsson). Scratch: flag
    // bits at sk_bits_off, the r x F remainder at sk_rem_off, the cut's chunk flags + ticket at sk_chunk_off.
    // sk_group_bytes: shared memory a tile block aims at (several short tiles per block).
    int64_t sk_k = 0, sk_bits_off = 0, sk_rem_off = 0, sk_chunk_off = 0, sk_group_bytes = 0;
    // The tile pass's kernel where 16-byte global accesses align: 1 the hybrid where its gather is free of bank
    // conflicts, else vec; 2 always vec; 0 element accesses (TORCH_INPLACE_GPU_SKINNY_TILEVEC=vec / 0: measurements).
    int64_t sk_tile_vec = 1;
    int64_t sq_narrow = 0;  // square tile-pair swaps with 32 x 32 tiles for every element size (a measurement knob)
    // On chip (kernels/transpose/onchip.cuh): oc_tr x oc_tc tiles staged with row stride oc_s, oc_per_block
    // tiles in each of oc_grid blocks, oc_smem bytes of shared memory per block. oc_wave > 0 (a batch too large
    // for the shared memory, each matrix small enough): the kernel takes the batch oc_wave matrices at a time
    // (the last wave may hold fewer), and oc_per_block / oc_grid are those of one wave.
    int64_t oc_tr = 0, oc_tc = 0, oc_s = 0, oc_per_block = 0, oc_grid = 0, oc_smem = 0, oc_wave = 0;
    // Tiles of whole rows or whole columns (AoS <-> SoA): oc_skinny > 0 runs the skinny kernel with 16-byte
    // accesses (kernels/transpose/onchip_skinny.cuh) on oc_skinny bytes of shared memory per block (what decided
    // that the tensor fits; oc_smem is then the element kernel's, which the launcher falls back to only for an
    // address that is not a multiple of the element size, where every kernel of the engine would fault anyway).
    int64_t oc_skinny = 0;
    // oc_stash > 0: the skinny kernel with a register stash (onchip_skinny_stash_kernel, for tensors just past the
    // shared memory): the first oc_stash of each block's tiles wait in registers across the grid barrier.
    int64_t oc_stash = 0;
  } gpu;

  // One line: "c2r (rows > cols: the row shuffle runs on the short side); scratch 1234 B".
  std::string explain() const;
};

// Why a forced or limited plan is impossible is reported by throwing PlanError (the op turns it into a
// TORCH_CHECK failure that names the op).
struct PlanError {
  std::string message;
};

// Chooses (or, with `forced` != Auto, checks and parameterises) an algorithm. `workspace_limit` < 0 means
// no limit; otherwise only plans whose scratch_bytes fit are returned, else PlanError.
Plan make_plan(const Problem& p, const DeviceCaps& caps, Algo forced = Algo::Auto, int64_t workspace_limit = -1);

// The CPU and GPU planners (transpose_plan.cpp, gpu_plan.cpp). Each returns the candidate list for a problem,
// best first; make_plan takes the first that fits the limit (or the forced one).
std::vector<Plan> cpu_candidates(const Problem& p, const DeviceCaps& caps, Algo forced);
std::vector<Plan> gpu_candidates(const Problem& p, const DeviceCaps& caps, Algo forced);

// GPU 100! (super_cycles_kernel, kernels/transpose/skinny.cuh): one warp carries at most kGpuSuperMaxBytes of a
// super-element in its registers, so a wider one moves as gpu_super_slices(bytes) slices of its own cycles, each
// with one flag bit; gpu_super_bits_bytes is the flag scratch for `supers` super-elements (64-byte aligned).
constexpr int64_t kGpuSuperMaxBytes = 2048;
inline int64_t gpu_super_slices(int64_t bytes) { return (bytes + kGpuSuperMaxBytes - 1) / kGpuSuperMaxBytes; }
inline int64_t gpu_super_bits_bytes(int64_t supers, int64_t bytes) {
  return (supers * gpu_super_slices(bytes) + 511) / 512 * 64;
}

// GPU tiled sequences 3.1 / 3.2: a tile goes through one block's shared memory (group_tiles_kernel, row stride
// n | 1) when it fits kGpuTileBytes; larger ones are square and swapped in place by tile pairs, with sides up to
// kGpuSquareTileMaxBytes.
constexpr int64_t kGpuTileBytes = 48 * 1024;
constexpr int64_t kGpuSquareTileMaxBytes = 4096;
inline bool gpu_tile_in_smem(int64_t m, int64_t n, int64_t esize) { return m * (n | 1) * esize <= kGpuTileBytes; }

// Slack bytes (past the elements) that empty_transposable gives a tensor so that GPU transposes of it, either
// way round, can take the padded path (gpu_plan.cpp); 0 where padding never helps.
int64_t padding_slack_bytes(const Problem& p);

// CPU Catanzaro engine: columns per panel in the column rotations, and in the row permutation (cycle
// following: wide segments, a few panels per thread).
int64_t cpu_panel_width(int64_t esize);
int64_t cpu_permute_panel_width(int64_t n, int64_t esize, int64_t threads, int64_t panel);

// Its scratch for an (m, n) decomposition (offsets in bytes, each 64-byte aligned): two bitmaps of m bits (visited, cycle
// leaders of the row permutation q) and one buffer per thread.
struct CpuScratchLayout {
  int64_t bitmap_words = 0, visited_off = 0, leaders_off = 0;
  int64_t thread_elems = 0, threads_off = 0;
  int64_t total = 0;
};
CpuScratchLayout cpu_scratch_layout(int64_t m, int64_t n, int64_t esize, int64_t threads, int64_t panel);

// CPU skinny path (Gomez-Luna/Sung sequence 2.1 with a Karlsson cut): the long side N is cut into Mp = N / k
// tiles of k rows (plan.tile_m = k) plus r = N mod k remainder rows. Each k x F tile is transposed through a
// thread buffer (010!), the (Mp, F, k) array of k-element super-elements becomes (F, Mp, k) by cycle following
// (100!), and the remainder rows are spread into place through a saved block. Scratch: a visited bitmap of
// Mp*F bits, one buffer of max(k*F, 2k) elements per thread, and the r x F remainder.
struct CpuSkinnyLayout {
  int64_t N = 0, F = 0, k = 1, Mp = 0, r = 0;
  int64_t bitmap_words = 0, visited_off = 0;
  int64_t thread_elems = 0, threads_off = 0;
  int64_t remainder_off = 0;
  int64_t total = 0;
};
int64_t cpu_skinny_tile(int64_t N, int64_t F, int64_t esize);
CpuSkinnyLayout cpu_skinny_layout(int64_t N, int64_t F, int64_t esize, int64_t threads, int64_t k);

// CPU tiled path (plan Tiled32): Karlsson's three-stage algorithm (paper 004 sec. 7), i.e. Gomez-Luna/Sung
// sequence 3.2 with its last step, the 100! of (M', N, m) super-elements of m elements, split into a 100! of whole
// m x n blocks and a 0100! inside each column band. rows = M' * m, cols = N' * n (plan.tile_m = m, plan.tile_n = n):
//   1. 0100! in each row band:    (M', m, N', n) -> (M', N', m, n)   bands of m * cols elements (cache-sized)
//   2. 100! of the blocks, each   (M', N', m, n) -> (N', M', n, m)   m x n blocks moved by cycle following and
//      transposed on the way (the 0010! fused in, as Karlsson's stages B1 + B2)
//   3. 0100! in each column band: (N', M', n, m) -> (N', n, M', m)   bands of n * rows elements
// Three passes over the matrix, each with long contiguous moves (super-elements of m or n elements, whole blocks).
// Scratch, per thread: the visited and cycle-leader bitmaps of the M' * N' blocks, a visited bitmap for a band's
// problem (max(m * N', M' * n) bits), and one m x n block.
struct CpuTiledLayout {
  int64_t m = 1, n = 1, Mp = 1, Np = 1;
  int64_t block_words = 0, band_words = 0;
  int64_t visited_off = 0, leaders_off = 0, band_off = 0, block_off = 0;  // within a thread's region
  int64_t thread_bytes = 0;                                               // one thread's region (64-byte aligned)
  int64_t total = 0;
};
// A side of the CPU tiled path's blocks for an extent x: the divisor d of x whose super-element (d * esize bytes)
// lies in [kCpuTiledMinBytes, kCpuTiledMaxBytes] closest to kCpuTiledBytes (ties to the larger); 0 where none.
// Blocks hold at most kCpuTiledMaxBlockBytes (the longer side shrinks to a smaller divisor in range where needed).
constexpr int64_t kCpuTiledMinBytes = 64, kCpuTiledBytes = 512, kCpuTiledMaxBytes = 1024;
constexpr int64_t kCpuTiledMaxBlockBytes = 64 * 1024;
int64_t cpu_tiled_side(int64_t x, int64_t esize);
// Block sides (m | rows, n | cols) for the tiled path: cpu_tiled_side of each, the longer one shrunk while the block
// holds more than kCpuTiledMaxBlockBytes; false where a side has none.
bool cpu_tiled_blocks(int64_t rows, int64_t cols, int64_t esize, int64_t* m, int64_t* n);
CpuTiledLayout cpu_tiled_layout(int64_t rows, int64_t cols, int64_t m, int64_t n, int64_t esize, int64_t threads);

// CPU cut path (plan Cut): Karlsson's cuts (paper 004 sec. 3.1.3) around the three stages, for sides without a
// block-sized divisor. The last c columns (plan.cut_cols) are saved and every row compacted to cols - c elements;
// the last r rows (plan.cut_rows) of that are saved; the (rows - r) x (cols - c) matrix goes through the tiled path;
// its transpose's rows are spread to length rows and the saved rows fill their tails; the saved columns become the
// last c rows. Two more passes than the tiled path (one where only one side is cut): row moves in waves across the
// threads (move_rows in csrc/ops/cpu/transpose_kernel.cpp).
// Scratch: the tiled layout of the inner matrix, then rows x c and r x (cols - c) elements (offsets cols_off,
// rows_off); the planner keeps the saved part within 1 MiB plus 0.1% of the tensor.
constexpr int64_t kCpuMaxCut = 64;
constexpr int kCpuCutSecondThreads = 16;     // from this many threads on, Catanzaro's plans go ahead of the cut
constexpr int64_t kCpuCutSecondEsize = 8;     // for elements of this many bytes or more
struct CpuCutLayout {
  CpuTiledLayout tiled;
  int64_t cols_off = 0, rows_off = 0, total = 0;
};
CpuCutLayout cpu_cut_layout(int64_t rows, int64_t cols, int64_t r, int64_t c, int64_t m, int64_t n, int64_t esize,
                            int64_t threads);

// CPU in-cache path (plan OnChip on the CPU), for matrices of at most kCpuOnchipMaxElems elements and
// kCpuOnchipMaxBytes bytes: a worker copies a run of per_chunk whole matrices (contiguous in the batch) into its
// buffer, then writes them back transposed, the destination in order, through an index table that all workers
// share (table[d]: where in the run destination element d comes from). One read and one write of each element
// from memory, and no loop per matrix, which is what batches of tiny matrices need. Scratch: the table
// (per_chunk * rows * cols int32 at table_off) and a buffer of chunk_elems elements per thread (at buffers_off).
constexpr int64_t kCpuOnchipMaxElems = 4096, kCpuOnchipMaxBytes = 32 * 1024;
constexpr int64_t kCpuOnchipChunkElems = 4096, kCpuOnchipChunkBytes = 16 * 1024;  // a run aims at the smaller
constexpr int64_t kCpuOnchipFirstElems = 64, kCpuOnchipFirstBytes = 512;  // the planner's first choice up to these
struct CpuOnchipLayout {
  int64_t per_chunk = 1, chunk_elems = 0;
  int64_t table_off = 0, buffers_off = 0, thread_bytes = 0;
  int64_t total = 0;
};
bool cpu_onchip_fits(int64_t rows, int64_t cols, int64_t esize);
CpuOnchipLayout cpu_onchip_layout(int64_t batch, int64_t rows, int64_t cols, int64_t esize, int64_t threads);

}  // namespace plan
}  // namespace torch_inplace
