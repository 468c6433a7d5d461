// Table and register sizes: the one place to change them. Both targets include this file.
#ifndef SYMPHONY_SIZES_P4
#define SYMPHONY_SIZES_P4

// Per-job register slots (index = Job_ID, 0 = untracked). Tag mode names 1..8191 (13-bit tag);
// hosts mode can use every ID below MAX_JOBS.
#ifndef MAX_JOBS
#define MAX_JOBS 16384
#endif
// Hashed per-flow PSN base slots (flow = IPv4 source + BTH destination QP).
#ifndef FLOW_SLOTS
#define FLOW_SLOTS 65536
#endif
// IPv4 source -> Job_ID entries for hosts that cannot tag.
#ifndef HOST_TABLE_SIZE
#define HOST_TABLE_SIZE 16384
#endif
#define ROUTE_TABLE_SIZE 1024
#define PORT_TABLE_SIZE 512
// log2 LPM tables: 2^7 - 1 exact entries + 17 exponents x 2^6 mantissas = 1215 (model/tables.py).
#define LOG_TABLE_SIZE 1280
#define ALPHA_TABLE_SIZE 256
// Probability table domain: d in [0, 16 * 256).
#define PROB_TABLE_SIZE 4096
#define QUEUE_TABLE_SIZE 8192

#endif
