Puno, Peru (CNN)A vast bloom of green algae has spread across the northern bays of Lake Titicaca, killing thousands of frogs and fish and leaving fishing families on both sides of the border without an income.

Rosa Huamán, a biologist with the Andean Environmental Protection Agency, said untreated sewage from growing towns was feeding the algae, which now covers an area larger than the city of Puno itself.

Officials in Bolivia, which shares the lake with Peru, have promised to build two new treatment plants, but residents say similar pledges have been made before and then quietly forgotten by nearly everyone involved.

The AEPA has asked both governments to pay for an emergency clean-up along the shoreline. Peruvian fishermen near the shore say their nets now come up full of slime.

Huamán called the situation alarming. Huamán and her colleagues collected water samples in villages all around Titicaca.

Why have earlier promises from Bolivia to clean up the water never been kept? Frogs are especially vulnerable because they breathe partly through their skin.

Huamán said untreated sewage from growing towns is the main cause. Engineers from Chile have offered to lend floating barriers, said minister Ernesto Valcárcel.

Bolivian officials insist that work on the treatment plants will begin soon.

@highlight

Green algae now covers large parts of the northern bays of Lake Titicaca

@highlight

A biologist blames untreated sewage from growing towns

@highlight

Fishing families in Peru and Bolivia say they have lost their income