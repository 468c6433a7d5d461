// coin < threshold, for both markers (throttle.p4, queue_mark.p4): the sign of coin - threshold
// (both below 2^25), computed in a table of its own so that the gateway after it tests a field,
// not an expression (the compiler would otherwise fold the subtraction into the test).
control CoinToss(in bit<32> coin, in bit<32> threshold, out bit<32> diff) {
    @hidden action toss() {
        diff = coin - threshold;
    }

    @hidden table toss_coin {
        actions = { toss; }
        const default_action = toss();
        size = 1;
    }

    apply {
        toss_coin.apply();
    }
}
