/* GPU layout transform: on the GPU every tensor is plain NCHW (in_cb == out_cb == 1), so this is
 * the channel copy of concat.c with offset 0, which is a straight element copy. */
#include "templates_int.h"

const tc__cuda_op tc__cuda_op_layout = {TC_KERNEL_LAYOUT, tc__cuda_copy_space,
                                        tc__cuda_in_map_fallback, tc__cuda_in_map_shape,
                                        tc__cuda_copy_lower};
