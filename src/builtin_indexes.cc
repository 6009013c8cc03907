// The built-in indexes: one call per index family, in the order `dptree bench --list` shows.
namespace dptree {

void register_volatile_indexes();  // btree/volatile_indexes.cc
void register_olc_btree_index();   // btree/olc_btree_index.cc
void register_dptree_indexes();    // st/dptree_index.cc
void register_cdptree_index();     // cdptree/cdptree_index.cc
void register_cawbt_index();       // baselines/cawbt/cawbt.cc
void register_utree_index();       // baselines/utree/utree.cc
void register_lbtree_index();      // baselines/lbtree/lbtree.cc
void register_wort_index();        // baselines/wort/wort.cc
void register_roart_index();       // baselines/roart/roart_index.cc
void register_pactree_index();     // baselines/pactree/pactree_index.cc
void register_tips_indexes();      // tips/tips_btree.cc
void register_fastfair_index();    // baselines/fastfair/fastfair_index.cc
void register_paper_peers();       // baselines/fptree/fptree.cc (fptree)
void register_bm_btree_index();    // baselines/bmtree/bm_btree.cc

void register_builtin_indexes() {
  register_volatile_indexes();
  register_olc_btree_index();
  register_dptree_indexes();
  register_cdptree_index();
  register_cawbt_index();
  register_utree_index();
  register_lbtree_index();
  register_wort_index();
  register_roart_index();
  register_pactree_index();
  register_fastfair_index();
  register_paper_peers();
  register_bm_btree_index();
  register_tips_indexes();
}

}  // namespace dptree
