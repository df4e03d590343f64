// Package kmeans is FlexChain's compute-heavy contract: a food-distribution
// service that clusters customer profiles (points) with K-Means. Its
// purpose is a workload where execution (simulation) dominates the cost of
// a transaction.
//
//	seed_points(first, count, dims, seed)   writes points first..first+count-1
//	                                        drawn from seed (preload; 1 to MaxSeed)
//	update_profile(id, coords)              a blind write of point id: coords is a
//	                                        JSON array of integers (write-only)
//	get_food(first, n, k, dims, epochs, threshold)
//	                                        reads points first..first+n-1, runs K-Means
//	                                        and writes the result under result_<first>
//
// Points live under point_<id> (id zero-padded to 8 digits, so that key
// order is id order) as JSON arrays of integer coordinates in fixed point:
// Scale units are 1.0.
//
// Determinism (invariant): endorsers of different orgs must return and
// write identical bytes. All arithmetic is on int64 (sums, squared
// distances, integer means), never on floating point, and nothing depends
// on map iteration order: initial centroids are the first k points read,
// ties in the nearest centroid go to the lower index. The threshold, the
// only floating-point input, is converted once to fixed point.
//
// Overflow bound: coordinates are 0 to MaxCoord (1e6), so a squared
// distance is at most MaxDims*MaxCoord² = 1e15 and a coordinate sum at
// most MaxPoints*MaxCoord = 1e10: both far inside int64.
package kmeans
