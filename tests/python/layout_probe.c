/* layout_probe.c — prints the size of every public struct the Python package mirrors with ctypes
 * (drivers/python/atf/_lib.py; the data stage's in drivers/python/atf/_data_lib.py, the kernel
 * report's in _kernel_lib.py) and the offset of each field, one "NAME VALUE" per line, for
 * tests/python/test_layout.py to compare with ctypes.sizeof and the ctypes field offsets. */
#include <stddef.h>
#include <stdio.h>

#include "atf_data.h"
#include "atf_features.h"
#include "atf_kernel.h"
#include "atf_mlp.h"
#include "atf_penalty.h"
#include "atf_problem.h"
#include "atf_result.h"
#include "atf_solver.h"

#define SIZE(T) printf("%s %zu\n", #T, sizeof(T))
#define OFF(T, f) printf("%s.%s %zu\n", #T, #f, offsetof(T, f))

static void omega_penalty(void)
{
    SIZE(atf_omega);
    OFF(atf_omega, family); OFF(atf_omega, p); OFF(atf_omega, scale); OFF(atf_omega, auto_scale);
    SIZE(atf_penalty);
    OFF(atf_penalty, w1); OFF(atf_penalty, w2);
}

static void block_problem(void)
{
    SIZE(atf_block);
    OFF(atf_block, name); OFF(atf_block, index); OFF(atf_block, rows); OFF(atf_block, cols);
    OFF(atf_block, N); OFF(atf_block, C); OFF(atf_block, M); OFF(atf_block, penalty);
    OFF(atf_block, penalty_spec); OFF(atf_block, structure); OFF(atf_block, kind);
    OFF(atf_block, J); OFF(atf_block, nnz); OFF(atf_block, indptr); OFF(atf_block, indices);
    OFF(atf_block, data); OFF(atf_block, H); OFF(atf_block, D);
    SIZE(atf_provenance);
    OFF(atf_provenance, atf_version); OFF(atf_provenance, command);
    OFF(atf_provenance, data_source); OFF(atf_provenance, has_data_seed);
    OFF(atf_provenance, data_seed); OFF(atf_provenance, has_standardize);
    OFF(atf_provenance, standardize); OFF(atf_provenance, mlp_fingerprint);
    SIZE(atf_problem);
    OFF(atf_problem, N); OFF(atf_problem, C); OFF(atf_problem, M); OFF(atf_problem, r);
    OFF(atf_problem, y); OFF(atf_problem, f0); OFF(atf_problem, labels);
    OFF(atf_problem, nblocks); OFF(atf_problem, blocks); OFF(atf_problem, test);
    OFF(atf_problem, fingerprint); OFF(atf_problem, fingerprint_state); OFF(atf_problem, prov);
    OFF(atf_problem, shard_first); OFF(atf_problem, shard_count);
}

static void result(void)
{
    SIZE(atf_result_block);
    OFF(atf_result_block, name); OFF(atf_result_block, rows); OFF(atf_result_block, cols);
    OFF(atf_result_block, penalty_spec); OFF(atf_result_block, B);
    OFF(atf_result_block, layout); OFF(atf_result_block, k); OFF(atf_result_block, d);
    OFF(atf_result_block, s1); OFF(atf_result_block, sigma); OFF(atf_result_block, s2);
    OFF(atf_result_block, U); OFF(atf_result_block, V);
    SIZE(atf_info);
    OFF(atf_info, status); OFF(atf_info, method);
    OFF(atf_info, objective); OFF(atf_info, iterations); OFF(atf_info, primal_residual);
    OFF(atf_info, dual_residual); OFF(atf_info, constraint_residual);
    OFF(atf_info, stationarity); OFF(atf_info, ls_residual); OFF(atf_info, loss_value);
    OFF(atf_info, penalty_value); OFF(atf_info, pg_residual); OFF(atf_info, duality_gap);
    OFF(atf_info, operator_passes); OFF(atf_info, inner_iterations);
    OFF(atf_info, linsys);
    OFF(atf_info, fallback_steps); OFF(atf_info, method_note);
    OFF(atf_info, solve_seconds); OFF(atf_info, setup_seconds);
    OFF(atf_info, projection_seconds); OFF(atf_info, prox_seconds);
    OFF(atf_info, other_seconds);
    SIZE(atf_result);
    OFF(atf_result, structure); OFF(atf_result, nblocks); OFF(atf_result, blocks);
    OFF(atf_result, info);
    OFF(atf_result, problem_fingerprint); OFF(atf_result, loss);
    OFF(atf_result, penalty_override); OFF(atf_result, tol); OFF(atf_result, eps_abs);
    OFF(atf_result, rho); OFF(atf_result, alpha); OFF(atf_result, max_iter);
    OFF(atf_result, reduce); OFF(atf_result, adaptive_rho); OFF(atf_result, atf_version);
    OFF(atf_result, command);
}

static void settings(void)
{
    SIZE(atf_loss);
    OFF(atf_loss, kind); OFF(atf_loss, lambda);
    SIZE(atf_settings);
    OFF(atf_settings, method); OFF(atf_settings, loss); OFF(atf_settings, structure);
    OFF(atf_settings, max_iter); OFF(atf_settings, eps_abs); OFF(atf_settings, eps_rel);
    OFF(atf_settings, alpha); OFF(atf_settings, rho); OFF(atf_settings, adaptive_rho);
    OFF(atf_settings, reduce); OFF(atf_settings, verbose); OFF(atf_settings, log_every);
    OFF(atf_settings, baseline); OFF(atf_settings, newton_rank);
    OFF(atf_settings, continuation); OFF(atf_settings, linsys); OFF(atf_settings, precond);
    OFF(atf_settings, memory_fraction); OFF(atf_settings, gram_max_rows);
    SIZE(atf_solve_progress);
    OFF(atf_solve_progress, method); OFF(atf_solve_progress, iteration); OFF(atf_solve_progress, max_iterations);
    OFF(atf_solve_progress, measure); OFF(atf_solve_progress, tolerance); OFF(atf_solve_progress, passes);
    OFF(atf_solve_progress, seconds);
    SIZE(atf_hooks);
    OFF(atf_hooks, log); OFF(atf_hooks, log_ctx); OFF(atf_hooks, warm);
    OFF(atf_hooks, interrupt); OFF(atf_hooks, processes); OFF(atf_hooks, checkpoint);
    OFF(atf_hooks, checkpoint_ctx); OFF(atf_hooks, checkpoint_seconds); OFF(atf_hooks, resume);
    OFF(atf_hooks, precond_file); OFF(atf_hooks, progress); OFF(atf_hooks, progress_ctx);
    SIZE(atf_checkpoint);
    OFF(atf_checkpoint, key); OFF(atf_checkpoint, len); OFF(atf_checkpoint, data);
    SIZE(atf_checkpoint_file);
    OFF(atf_checkpoint_file, path); OFF(atf_checkpoint_file, err);
    printf("sig_atomic_t %zu\n", sizeof(sig_atomic_t));
    SIZE(atf_method_info);
    OFF(atf_method_info, method); OFF(atf_method_info, name); OFF(atf_method_info, summary);
    OFF(atf_method_info, interpolation); OFF(atf_method_info, penalized);
    OFF(atf_method_info, baseline); OFF(atf_method_info, resumable);
    OFF(atf_method_info, matrix_free); OFF(atf_method_info, linsys); OFF(atf_method_info, warm);
    OFF(atf_method_info, processes);
}

static void jacobian(void)
{
    SIZE(atf_jac_block);
    OFF(atf_jac_block, name); OFF(atf_jac_block, layer); OFF(atf_jac_block, rows);
    OFF(atf_jac_block, cols); OFF(atf_jac_block, H); OFF(atf_jac_block, D);
    SIZE(atf_jacobian);
    OFF(atf_jacobian, N); OFF(atf_jacobian, C); OFF(atf_jacobian, M); OFF(atf_jacobian, nblocks);
    OFF(atf_jacobian, f); OFF(atf_jacobian, blocks);
}

static void predictions(void)
{
    SIZE(atf_split_eval);
    OFF(atf_split_eval, N); OFF(atf_split_eval, C); OFF(atf_split_eval, f);
    OFF(atf_split_eval, y); OFF(atf_split_eval, labels); OFF(atf_split_eval, mse);
    OFF(atf_split_eval, rel_mse); OFF(atf_split_eval, error); OFF(atf_split_eval, class_error);
    SIZE(atf_predictions);
    OFF(atf_predictions, train); OFF(atf_predictions, test);
}

/* atf.data (drivers/python/atf/_data_lib.py): the data options, data sets and tasks, and the
 * network options and architecture that teacher targets are drawn with. */
static void data(void)
{
    SIZE(atf_data_options);
    OFF(atf_data_options, source); OFF(atf_data_options, nclasses);
    OFF(atf_data_options, classes); OFF(atf_data_options, n_train);
    OFF(atf_data_options, n_test); OFF(atf_data_options, seed);
    OFF(atf_data_options, standardize); OFF(atf_data_options, official_split);
    OFF(atf_data_options, targets); OFF(atf_data_options, teacher_seed);
    OFF(atf_data_options, ndata_dirs); OFF(atf_data_options, data_dirs);
    SIZE(atf_dataset);
    OFF(atf_dataset, N); OFF(atf_dataset, D); OFF(atf_dataset, C); OFF(atf_dataset, X);
    OFF(atf_dataset, Y); OFF(atf_dataset, labels);
    SIZE(atf_task);
    OFF(atf_task, train); OFF(atf_task, test); OFF(atf_task, nclasses); OFF(atf_task, classes);
    OFF(atf_task, targets); OFF(atf_task, teacher_accuracy); OFF(atf_task, source_name);
    OFF(atf_task, source); OFF(atf_task, data_dir); OFF(atf_task, standardized);
    SIZE(atf_activation);
    OFF(atf_activation, kind); OFF(atf_activation, slope); OFF(atf_activation, beta);
    OFF(atf_activation, threshold);
    SIZE(atf_arch);
    OFF(atf_arch, L); OFF(atf_arch, widths); OFF(atf_arch, bias); OFF(atf_arch, act);
    OFF(atf_arch, param); OFF(atf_arch, init); OFF(atf_arch, origin);
    SIZE(atf_net_options);
    OFF(atf_net_options, mlp_path); OFF(atf_net_options, have_widths);
    OFF(atf_net_options, arch); OFF(atf_net_options, bias); OFF(atf_net_options, activation);
    OFF(atf_net_options, seed); OFF(atf_net_options, seed_given);
}

/* atf.kernel_report (drivers/python/atf/_kernel_lib.py): the inputs and the report of
 * atf_kernel_report_compute (ATF_MAX_KERNELS and the name length show in the offsets after
 * names[][]). */
static void kernel_report(void)
{
    SIZE(atf_kernel_inputs);
    OFF(atf_kernel_inputs, problem); OFF(atf_kernel_inputs, result);
    OFF(atf_kernel_inputs, mlp0); OFF(atf_kernel_inputs, mlp);
    OFF(atf_kernel_inputs, path_points); OFF(atf_kernel_inputs, path_method);
    OFF(atf_kernel_inputs, problem_name); OFF(atf_kernel_inputs, result_name);
    OFF(atf_kernel_inputs, mlp0_name); OFF(atf_kernel_inputs, mlp_name);
    SIZE(atf_kernel_report);
    OFF(atf_kernel_report, M); OFF(atf_kernel_report, nkernels); OFF(atf_kernel_report, nblocks);
    OFF(atf_kernel_report, names); OFF(atf_kernel_report, K); OFF(atf_kernel_report, blocks);
    OFF(atf_kernel_report, cosine); OFF(atf_kernel_report, cka);
    OFF(atf_kernel_report, layer_cosine); OFF(atf_kernel_report, layer_cka);
    OFF(atf_kernel_report, theorem1_s); OFF(atf_kernel_report, f0_check);
}

int main(void)
{
    omega_penalty();
    block_problem();
    result();
    settings();
    jacobian();
    predictions();
    data();
    kernel_report();
    return 0;
}
