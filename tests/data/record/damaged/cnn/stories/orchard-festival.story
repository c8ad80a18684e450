Thousands of visitors travelled to the village of Brennick in Herefordshire on Saturday for the annual Cider Orchard Festival, organised by the Brennick Growers Association. Festival director Owen Maddox said ticket sales had doubled since last year.

Local farmers pressed more than two tonnes of apples in front of the crowds during the afternoon.

Maddox thanked the volunteers who spent weeks preparing the orchards for the visitors.

@highlight

Cider Orchard Festival draws thousands to Brennick

@highlight

Organisers say ticket sales doubled