// Package scm is StreamChain's supply-chain-management contract: vendors
// that make products, contracts between a buying and a selling vendor for
// one product, orders placed under a contract, and each vendor's
// inventory of each product. Records are JSON under keys built from the
// SQL schema's primary keys:
//
//	vendor_<vendor>                vendor_007
//	product_<product>              product_0042 (made by vendor product mod vendors)
//	contract_<id>                  {id, buyer, seller, product, price}
//	order_<id>                     {id, contract, quantity, status}
//	inventory_<vendor>_<product>   {onHand, orders, orderSum, orderSumSq,
//	                                demands, demandSum, demandSumSq}
//
// Transactional functions:
//
//	setup(vendors, products)                 vendors and products (preload)
//	create_contracts([{id,buyer,seller,product,price}])  1 to MaxBatch (preload)
//	create_contract(id, buyer, seller, product, price)
//	place_order(id, contract, quantity)      the buyer's inventory records the order
//	update_order(id, status)                 placed → shipped (seller's stock goes
//	                                         out) → delivered (buyer's stock comes in)
//	update_inventory(vendor, product, delta) delta > 0 restocks; delta < 0 sells
//	                                         -delta to end customers (demand)
//
// Analytical functions (read only):
//
//	days_of_supply(vendor)   a range scan of the vendor's inventory: stock on hand
//	                         over mean demand per sale (local)
//	bullwhip()               a range scan of every inventory record: variance of
//	                         orders over variance of demand (global)
//
// Contention is high by design: orders and sales of one vendor and product
// read and write one inventory record, and the analytical range scans
// conflict (phantom reads) with every write in their range.
//
// Determinism: sums are int64; the only floating-point results (days of
// supply, variances, the coefficient) are computed from them with one
// rounding per operation (explicit conversions prevent fused
// multiply-add), so every endorser returns the same bytes.
package scm
